package proxy

import (
	"cmp"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/dpop"
	"github.com/mcpguard/mcpguard/validate/introspect"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// ErrConfig reports an unusable [Config]: [New] and [Parse] wrap
// it, with the field (or the file, line and key) named and the fix.
var ErrConfig = errors.New("proxy: invalid config")

// Defaults applied by [New] to zero-valued fields.
const (
	defaultAssertionTTL      = 60 * time.Second
	maxAssertionTTL          = 5 * time.Minute
	defaultJWKSPath          = "/.well-known/jwks.json"
	defaultDialTimeout       = 5 * time.Second
	defaultResponseHeader    = 60 * time.Second
	defaultIdleStream        = 5 * time.Minute
	defaultStreamsPerUser    = 16
	defaultStreamWrite       = 30 * time.Second
	defaultMaxResponseHeader = 64 << 10
	// upstreamIdleConn is how long a connection to an upstream stays
	// idle in the pool before the proxy closes it: below the 5 s after
	// which Node.js (http.Server keepAliveTimeout) and uvicorn close an
	// idle keep-alive connection, so that a request never goes out on a
	// connection the upstream is closing (the transport does not retry a
	// POST that fails so: the client would get a 502).
	upstreamIdleConn           = 4 * time.Second
	defaultExchangeMargin      = 30 * time.Second
	defaultIdentityCacheKeys   = 10000
	defaultExchangeMaxResponse = 64 << 10
)

// Identity modes (Identity.Mode).
const (
	modeAssertion = "assertion"
	modeExchange  = "exchange"
	modeHeaders   = "headers"
)

// Config configures a [Proxy]: the routes it serves and the key it signs
// identity assertions with. It is the schema of the configuration file
// (docs/proxy.md is generated from these comments); fields tagged
// yaml:"-" exist for Go callers only. [New] copies it.
type Config struct {
	// Routes are the protected MCP endpoints, each in front of one
	// upstream. Required, at least one; their resource paths must differ.
	Routes []Route `yaml:"routes"`

	// Issuers holds settings of the authorization servers the routes
	// trust, by issuer identifier: each key must be in a route's issuers.
	// An issuer without an entry has its keys discovered (RFC 8414,
	// OpenID Connect) and refreshed, and only its JWT access tokens are
	// accepted.
	Issuers map[string]Issuer `yaml:"issuers"`

	// Assertion configures the JWTs the proxy signs for upstreams in the
	// assertion mode.
	Assertion Assertion `yaml:"assertion"`

	// Timeouts bound the connections to upstreams and the answers to
	// clients.
	Timeouts Timeouts `yaml:"timeouts"`

	// Redis, when Addr is set, holds the state replicas share: step-up
	// counters, DPoP proof replay, session owners, pinned tools and
	// rate-limit counters,
	// so that several proxies behind a load balancer act as one.
	Redis Redis `yaml:"redis"`

	// TLS, when CertFile is set, makes "mcpguard proxy" serve HTTPS (TLS
	// 1.2 and later, Go's defaults), re-reading the files when they
	// change, so that certificates rotate without a restart. Package
	// proxy itself only checks it ([New] requires both files or neither).
	TLS TLS `yaml:"tls"`

	// DevAS, DEVELOPMENT ONLY, is the loopback host:port (such as
	// 127.0.0.1:9000) where "mcpguard proxy" starts its embedded
	// development authorization server (package devas: it approves
	// everyone), as its -dev-as flag does; routes trust it by listing
	// http://DevAS in their issuers. Empty: none. Package proxy itself
	// only checks it ([New] refuses a host that is not loopback).
	DevAS string `yaml:"dev_as"`

	// StripHeaders are request headers removed before forwarding, on top
	// of those always removed (docs/proxy.md, "What the upstream
	// receives"), case-insensitive. An entry ending in "*" is a prefix.
	StripHeaders []string `yaml:"strip_headers"`

	// Logger receives one line per decision and the proxy's warnings.
	// Nil discards.
	Logger *slog.Logger `yaml:"-"`
	// Transport, if set, replaces the proxy's own transport to upstreams
	// (tests, custom dialers); the dial and header timeouts are then its
	// own. Nil means a transport built from Timeouts.
	Transport http.RoundTripper `yaml:"-"`
	// Now is the clock of assertions, caches and middleware. Nil means
	// time.Now.
	Now func() time.Time `yaml:"-"`
	// StepUpStore, if set, is shared by every route's step-up bound
	// (redisstore.StepUpStore between replicas). Nil means in memory, or
	// Redis with Redis.Addr.
	StepUpStore middleware.StepUpStore `yaml:"-"`
	// OwnerStore, if set, keeps every route's session owners
	// (middleware SessionConfig.Store). Nil means this process only, or
	// Redis with Redis.Addr.
	OwnerStore middleware.OwnerStore `yaml:"-"`
	// PinStore, if set, keeps every route's pinned tool definitions
	// (Route.Pins; middleware ToolPins.Store). Nil means in memory, for
	// this Proxy alone, or Redis with Redis.Addr.
	PinStore middleware.PinStore `yaml:"-"`
	// ReplayStore, if set, remembers used DPoP proofs for every route. Nil
	// means in memory, or Redis with Redis.Addr.
	ReplayStore dpop.ReplayStore `yaml:"-"`
	// KeysObserver, if set, observes the key refreshes of every issuer's
	// key source (otelguard's Telemetry). Nil costs nothing.
	KeysObserver jwks.RefreshObserver `yaml:"-"`
	// IntrospectionObserver, if set, observes every introspection call
	// (otelguard's Telemetry). Nil costs nothing.
	IntrospectionObserver introspect.CallObserver `yaml:"-"`
	// Instrument, if set, is called with each route's mcpguard.Config
	// before the route is built, to add observers (otelguard's
	// Telemetry.Instrument). The OnDecision hook it sets gets one
	// decision event per decision: the proxy holds the middleware's
	// decision to pass a request until its own checks (rate limit,
	// upstream identity) are done, and delivers it or the proxy's own
	// refusal then (docs/operations.md, "Decision events").
	Instrument func(*mcpguard.Config) `yaml:"-"`
}

// Route is one protected MCP endpoint: the public resource the proxy
// serves and the upstream it forwards to.
type Route struct {
	// Resource is the public canonical URL of this MCP endpoint, the
	// audience client tokens must carry, such as
	// "https://mcp.example.com/mcp". Its path is where the proxy serves it;
	// its protected-resource metadata is served at the RFC 9728 path
	// inserted well-known URL (and at the root one for a single route).
	// Required: https, or http on a loopback host.
	Resource string `yaml:"resource"`
	// Upstream is the URL of the MCP server's Streamable HTTP endpoint
	// the proxy forwards to, such as "http://127.0.0.1:3000/mcp". Every
	// request goes to exactly this path (with the client's query).
	// Required: http or https, or a unix socket as
	// "unix:///run/mcp/server.sock?path=/mcp" (an absolute socket path;
	// path is the HTTP request path, default /mcp; the Host sent is
	// localhost). In YAML, a mapping here is the stdio form, the same as
	// Stdio: upstream: {command: [...], env: {...}, dir: ...}.
	Upstream string `yaml:"upstream"`
	// Stdio, when its Command is set, runs the MCP server as child
	// processes speaking stdio instead of forwarding to Upstream, which
	// must then be empty (docs/proxy.md, "stdio upstreams").
	Stdio Stdio `yaml:"stdio"`
	// Issuers are the trusted authorization servers' issuer identifiers;
	// their keys are discovered (RFC 8414, OpenID Connect) and refreshed.
	// Required, at least one: https, or http on a loopback host.
	Issuers []string `yaml:"issuers"`
	// Scopes are the base scopes every request needs, sent in the 401
	// challenge. Empty means none.
	Scopes []string `yaml:"scopes"`
	// Operations gives the scopes of MCP operations on top of Scopes
	// (docs/policy.md).
	Operations Operations `yaml:"operations"`
	// Policy holds rules beyond scopes, in CEL (docs/policy.md, "Rules").
	// The zero value has none.
	Policy Policy `yaml:"policy"`
	// Pins pins the definitions of the upstream's tools (docs/policy.md,
	// "Pinned tools"). The zero value pins nothing.
	Pins Pins `yaml:"pins"`
	// Identity says how the upstream learns who the caller is. The
	// client's own token never reaches it.
	Identity Identity `yaml:"identity"`
	// DPoP is the DPoP (RFC 9449) policy: "off" (default), "allowed" or
	// "required".
	DPoP string `yaml:"dpop"`
	// DPoPProof tunes the checks of DPoP proofs and turns on server
	// nonces. Ignored when DPoP is off.
	DPoPProof DPoPProof `yaml:"dpop_proof"`
	// ScopeImplies declares scope hierarchies: a token holding a key
	// scope satisfies each listed scope, transitively (middleware
	// ScopeImplies). Empty means none.
	ScopeImplies map[string][]string `yaml:"scope_implies"`
	// AllowedOrigins are browser origins allowed besides the resource's
	// own (middleware AllowedOrigins). Empty means none.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// Validation holds token-validation relaxations and settings.
	Validation Validation `yaml:"validation"`
	// StepUp bounds insufficient_scope challenges per principal.
	StepUp StepUp `yaml:"step_up"`
	// MaxBodyBytes bounds a POST body (413 beyond). Zero means 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxStreamsPerUser bounds the SSE streams one user (whatever the
	// client) holds open at once on this route: GET streams and POST
	// answers that are streams. Beyond it the answer is a 429 with
	// Retry-After; for a POST the upstream has already handled the
	// request. Zero means 16.
	MaxStreamsPerUser int `yaml:"max_streams_per_user"`
	// ResourceName is the RFC 9728 resource_name of the metadata. Empty
	// omits it.
	ResourceName string `yaml:"resource_name"`
	// Lists is what list answers (tools/list, prompts/list, resources/list,
	// resources/templates/list) show: "annotate" (default: every entry a
	// client could obtain the scopes for, each annotated with the scopes
	// its call needs, SEP-1488), "hide" (only what the token may call,
	// annotated too) or "off" (no annotation). In every mode, entries no
	// token could reach are removed.
	Lists string `yaml:"lists"`
	// Sessions bounds the MCP sessions bound to their users (the
	// middleware binds every session to the user that created it,
	// whatever the client: docs/sessions.md).
	Sessions Sessions `yaml:"sessions"`
	// RateLimit optionally limits requests per user and tool calls per
	// user and tool (429 with Retry-After).
	RateLimit RateLimit `yaml:"rate_limit"`
	// ForwardHeaders are request headers forwarded to the upstream on top
	// of the protocol's own (docs/proxy.md, "What the upstream
	// receives"); every other header a client sends is dropped. Each is a
	// header name, case-insensitive; credentials, cookies, forwarding and
	// identity headers are refused at load. Empty means none.
	ForwardHeaders []string `yaml:"forward_headers"`
}

// Stdio runs a route's MCP server as child processes that speak MCP on
// stdin and stdout, one per session, each for one user (docs/proxy.md,
// "stdio upstreams"). No shell is involved.
type Stdio struct {
	// Command is the server's argv, such as
	// [npx, -y, @modelcontextprotocol/server-everything]. Setting it makes
	// the route a stdio route; Upstream must then be empty. A first
	// element without a slash is looked up in the proxy's PATH at start,
	// a relative one is taken relative to the proxy's working directory
	// then (never the child's).
	// In the arguments after it, {dir} is the child's directory (Dir as
	// rendered for its user: an absolute path), such as
	// [node, /opt/mcp/server-filesystem/dist/index.js, "{dir}"].
	Command []string `yaml:"command"`
	// Env are variables set in each child's environment, by name; in a
	// value, {dir} is the child's directory, as in Command, such as
	// {MEMORY_FILE_PATH: "{dir}/memory.jsonl"}. A child inherits nothing
	// else but PassEnv and MCPGUARD_USER_ISSUER, MCPGUARD_USER_SUBJECT,
	// MCPGUARD_USER_TENANT and MCPGUARD_USER_CLIENT (its user, set by the
	// proxy). Empty means none.
	Env map[string]string `yaml:"env"`
	// PassEnv names variables copied from the proxy's environment when set
	// there, such as PATH and HOME (npx needs both). Empty means none.
	PassEnv []string `yaml:"pass_env"`
	// Dir is each child's working directory: an absolute path in which a
	// whole component may be {issuer}, {subject}, {tenant}, {client}
	// (each made one safe component: kept when lower-case letters, digits
	// and ._@+- not starting with a dot, else "~" and a SHA-256 prefix) or
	// {user} (a hash of the user), such as /srv/mcp/{tenant}/{subject};
	// created mode 0700 under the part without placeholders. Empty means
	// the proxy's own working directory, and {dir} in Command or Env is
	// then refused.
	Dir string `yaml:"dir"`
	// MaxChildren bounds the children running at once for this route:
	// beyond, the requesting user's least recently used idle child is
	// ended, else the least recently used child of any user idle for a
	// minute, else 503 with Retry-After. Zero means 64.
	MaxChildren int `yaml:"max_children"`
	// MaxPerUser bounds one user's children (sessions) at once: beyond,
	// the user's least recently used idle child is ended, else 503 with
	// Retry-After. Zero means 4.
	MaxPerUser int `yaml:"max_per_user"`
	// StartTimeout bounds a child's answer to initialize (request_timeout
	// does not apply to it). Zero means 30s.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// IdleTimeout stops a child with no request for this long; its
	// session ends. Zero means 15m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// StopGrace is the time between SIGTERM and SIGKILL when a child is
	// stopped. Zero means 5s.
	StopGrace time.Duration `yaml:"stop_grace"`
	// RequestTimeout bounds a child's answer to one request, and the
	// writing of one line to its stdin (a sequential server reads nothing
	// while it serves a call); a child that does not answer, or read, in
	// time is stopped as hung. Zero means 10m.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxMessageBytes bounds one line a child writes on stdout; a longer
	// one ends the child. An SSE event to a client is bounded to 4 MiB
	// in front whatever it is (docs/proxy.md, "Bounds and faults").
	// Zero means 4 MiB.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// MaxQueued bounds, per session, the requests in flight, the client's
	// notifications and answers waiting to be written to the child, the
	// child's messages waiting for a client and the events kept for resumption
	// (with 4 × max_message_bytes bytes), and with PerUser the sessions of
	// a child (a further initialize ends the oldest). Zero means 256.
	MaxQueued int `yaml:"max_queued"`
	// ResumeWindow keeps the SSE stream of a request resumable with
	// Last-Event-ID for this long once the child has answered and the
	// stream's connection has gone, whether or not the answer was written
	// on it (2025-11-25 sessions; "Resuming a stream"). Zero means 1m.
	ResumeWindow time.Duration `yaml:"resume_window"`
	// PerUser shares one child between the sessions (2025-11-25) of a
	// user instead of starting one per session; it is never shared
	// between users. Stateless (2026-07-28) requests of a user always
	// share that user's stateless child. False (the default) gives each
	// session its own.
	PerUser bool `yaml:"per_user"`
	// ForwardRoots passes the client's roots (MCP roots/list) to the
	// children. Dangerous: a server may take a client's roots as what it
	// may access (the filesystem server replaces its allowed directories
	// with them), so that a user could point his child at another user's
	// directory. False (the default) hides them: the roots capability is
	// removed from initialize and a child's roots/list gets -32601.
	ForwardRoots bool `yaml:"forward_roots"`
	// PIDNamespace starts each child as the first process of a PID
	// namespace of its own (Linux, and the proxy needs CAP_SYS_ADMIN, as
	// root has): when a child ends or is stopped, the kernel kills every
	// process it left, also one that left its process group (setsid, a
	// daemon), which is otherwise not stopped. The child is PID 1 there:
	// SIGTERM without a handler of its own is ignored, so it is killed
	// after stop_grace, and it inherits its orphans. False (the default)
	// starts children in the proxy's namespace.
	PIDNamespace bool `yaml:"pid_namespace"`
}

// Sessions bounds a route's session binding (middleware SessionConfig).
type Sessions struct {
	// Max bounds the sessions bound at once in this process. Zero means
	// the middleware's default (10000).
	Max int `yaml:"max"`
	// PerPrincipal is each user's quota (issuer, subject and tenant,
	// whatever the client). Zero means the middleware's default.
	PerPrincipal int `yaml:"per_principal"`
	// IdleTimeout ends a session unused for this long. Zero means the
	// middleware's default.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// BindClient binds a session to the client too: a request in it
	// with another client_id of the same user gets 404; so are tasks and
	// sessionless Last-Event-ID (docs/sessions.md, "The user"). Defaults
	// to false: a session is its user's, whatever the client.
	BindClient bool `yaml:"bind_client"`
}

// RateLimit is a route's optional rate limits, each "N/duration" (such as
// "600/1m": at most 600 in each minute, a fixed window), counted per
// user (the token's issuer, subject and tenant, whatever its client, so
// that client IDs chosen at will do not multiply a limit; a token that
// names no user counts as its client's), in memory or on Redis (shared by
// replicas).
type RateLimit struct {
	// Principal limits every request of one user. Empty means no
	// limit.
	Principal string `yaml:"principal"`
	// Tools limits the tools/call requests of one user per tool
	// name. A tool must also be listed in operations.tools (with no
	// scopes if it needs none) for its name to be known.
	Tools map[string]string `yaml:"tools"`
	// FailClosed answers 503 while the Redis counters cannot be reached.
	// Defaults to false: requests pass (and a warning is logged).
	FailClosed bool `yaml:"fail_closed"`
}

// Redis is the connection to a Redis server.
type Redis struct {
	// Addr is host:port. Empty means no Redis: state stays in each
	// process.
	Addr string `yaml:"addr"`
	// Username is the ACL user. Empty means the default user.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env"`
	// PasswordFile is a file holding the password.
	PasswordFile string `yaml:"password_file"`
	// DB is the database number.
	DB int `yaml:"db"`
	// Prefix starts every key. Empty means the redisstore default.
	Prefix string `yaml:"prefix"`
	// TLS connects with TLS (system roots).
	TLS bool `yaml:"tls"`
	// Password is the password itself, for Go callers.
	Password string `yaml:"-"`
}

// Operations is the operation policy of a route (middleware
// OperationPolicy, docs/policy.md).
type Operations struct {
	// Methods maps a JSON-RPC method to the scopes it needs.
	Methods map[string][]string `yaml:"methods"`
	// Tools maps a tools/call tool name to the scopes it needs.
	Tools map[string][]string `yaml:"tools"`
	// Prompts maps a prompts/get prompt name to the scopes it needs.
	Prompts map[string][]string `yaml:"prompts"`
	// Resources gives the scopes of resources/read by URI.
	Resources []ResourceRule `yaml:"resources"`
	// DenyUnlisted refuses methods, tools, prompts and resources the
	// policy does not list (terminal 403).
	DenyUnlisted bool `yaml:"deny_unlisted"`
	// Public lists operations served without a token.
	Public PublicOperations `yaml:"public"`
}

// ResourceRule gives the scopes of resources/read of a URI or prefix.
type ResourceRule struct {
	// URI is a canonical resource URI, or a prefix with Prefix.
	URI string `yaml:"uri"`
	// Prefix makes URI match every URI it starts.
	Prefix bool `yaml:"prefix"`
	// Scopes are the scopes needed on top of the base and method scopes.
	Scopes []string `yaml:"scopes"`
}

// PublicOperations are operations served without a token (middleware
// PublicOperations: read its trade-off first).
type PublicOperations struct {
	// Methods are JSON-RPC methods served without a token.
	Methods []string `yaml:"methods"`
	// Tools are tool names served without a token.
	Tools []string `yaml:"tools"`
	// Prompts are prompt names served without a token.
	Prompts []string `yaml:"prompts"`
	// Resources are resource URIs served without a token.
	Resources []string `yaml:"resources"`
}

// Identity is how a route tells its upstream who the caller is.
type Identity struct {
	// Mode is "assertion" (default: a short-lived JWT signed by the proxy,
	// verified by the upstream against the proxy's JWKS), "exchange" (an
	// RFC 8693 token exchange at the authorization server) or "headers"
	// (plain X-Mcpguard-* headers; loopback and unix-socket upstreams
	// only).
	Mode string `yaml:"mode"`
	// Audience is the aud of the assertion, or the audience requested in
	// an exchange. Empty means the Upstream URL.
	Audience string `yaml:"audience"`
	// Header is the request header carrying the assertion or exchanged
	// token. Empty means "Authorization", as "Bearer <token>"; any other
	// header carries the bare token.
	Header string `yaml:"header"`
	// TTL is the lifetime of an assertion, at most 5m, never beyond the
	// client token's expiry. Zero means 60s.
	TTL time.Duration `yaml:"ttl"`
	// Exchange configures the exchange mode.
	Exchange Exchange `yaml:"exchange"`
}

// Exchange configures RFC 8693 token exchange.
type Exchange struct {
	// TokenEndpoint is the authorization server's token endpoint: https,
	// or http on a loopback host. Empty means the token_endpoint of the
	// metadata of the client token's issuer (RFC 8414, then OpenID
	// Connect Discovery), discovered at its first exchange.
	TokenEndpoint string `yaml:"token_endpoint"`
	// ClientID is the proxy's client at the authorization server (HTTP
	// Basic authentication). Required in the exchange mode.
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv names the environment variable holding the client
	// secret. Exactly one of ClientSecretEnv and ClientSecretFile.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// ClientSecretFile is a file holding the client secret (trailing
	// newline removed).
	ClientSecretFile string `yaml:"client_secret_file"`
	// Scopes are requested in the exchange ("scope"). Empty requests
	// none: the authorization server decides.
	Scopes []string `yaml:"scopes"`
	// ClientSecret is the secret itself, for Go callers; the file never
	// holds it inline.
	ClientSecret string `yaml:"-"`
}

// Issuer is the settings of one trusted authorization server.
type Issuer struct {
	// JWKSURL is the URL of the issuer's JWK Set, used instead of the
	// jwks_uri of its metadata (no discovery). Empty means discovered.
	// https, or http on a loopback host.
	JWKSURL string `yaml:"jwks_url"`
	// RefreshInterval is how often the keys are fetched again. Zero means
	// the key source's default (validate/jwks).
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// OpaqueOnly says the issuer issues no JWT the proxy verifies: no keys
	// are fetched, its tokens are introspected (introspection is then
	// required), and a JWT naming it as iss is refused.
	OpaqueOnly bool `yaml:"opaque_only"`
	// Introspection configures RFC 7662 introspection at this issuer:
	// with its client_id set, every token that is not a JWT of one of the
	// route's issuers (opaque tokens above all) goes to this issuer's
	// introspection endpoint. JWTs of the route's issuers are still
	// validated locally, and never introspected when
	// that fails (docs/introspection.md, hybrid mode). At most one issuer
	// of a route may have it: an opaque token names no issuer.
	Introspection Introspection `yaml:"introspection"`
}

// Introspection configures RFC 7662 token introspection at one issuer
// (validate/introspect Config).
type Introspection struct {
	// Endpoint is the introspection endpoint. Empty means the
	// introspection_endpoint of the issuer's metadata (RFC 8414). https,
	// or http on a loopback host.
	Endpoint string `yaml:"endpoint"`
	// ClientID is the proxy's client at the authorization server. Setting
	// it turns introspection on.
	ClientID string `yaml:"client_id"`
	// AuthMethod is how the proxy authenticates: "client_secret_basic"
	// (default), "client_secret_post" or "private_key_jwt".
	AuthMethod string `yaml:"auth_method"`
	// ClientSecretEnv names the environment variable holding the client
	// secret (client_secret_basic and client_secret_post).
	ClientSecretEnv string `yaml:"client_secret_env"`
	// ClientSecretFile is a file holding the client secret (trailing
	// newline removed).
	ClientSecretFile string `yaml:"client_secret_file"`
	// PrivateKeyFile is the PEM signing key of private_key_jwt (EC, Ed25519
	// or RSA of 2048 bits or more).
	PrivateKeyFile string `yaml:"private_key_file"`
	// KeyID is the kid of the private_key_jwt client assertions. Empty
	// sends none.
	KeyID string `yaml:"key_id"`
	// Timeout bounds one introspection call. Zero means 5s.
	Timeout time.Duration `yaml:"timeout"`
	// CacheSize is the number of results remembered. Zero means 4096;
	// negative disables the cache.
	CacheSize int `yaml:"cache_size"`
	// MaxCacheTTL is the longest an active result is reused, the longest
	// a revoked token is still accepted. Zero means 60s.
	MaxCacheTTL time.Duration `yaml:"max_cache_ttl"`
	// InactiveCacheTTL is how long an inactive result is remembered. Zero
	// means not at all.
	InactiveCacheTTL time.Duration `yaml:"inactive_cache_ttl"`
	// AllowMissingAudience accepts active answers without aud (WEAKENS
	// audience binding: a token for another resource is then accepted).
	AllowMissingAudience bool `yaml:"allow_missing_audience"`
	// AllowMissingSubject accepts active answers without sub.
	AllowMissingSubject bool `yaml:"allow_missing_subject"`
	// ClientSecret is the secret itself, for Go callers.
	ClientSecret string `yaml:"-"`
	// PrivateKey is the private_key_jwt key itself, for Go callers.
	PrivateKey crypto.Signer `yaml:"-"`
}

// enabled reports whether introspection is configured.
func (i *Introspection) enabled() bool { return i.ClientID != "" }

// DPoPProof tunes DPoP proof checks (validate/dpop Config).
type DPoPProof struct {
	// Algorithms is the allow-list of proof algorithms, published as
	// dpop_signing_alg_values_supported. Empty means the dpop package's
	// default (ES256, ES384, ES512, EdDSA, RS256, PS256, …).
	Algorithms []string `yaml:"algorithms"`
	// Window is how far a proof's iat may be from now. Zero means 5m.
	Window time.Duration `yaml:"window"`
	// ReplayMargin keeps used proof IDs this much longer, to cover clock
	// differences between replicas sharing Redis. Zero means the dpop
	// default with a shared store, none otherwise.
	ReplayMargin time.Duration `yaml:"replay_margin"`
	// NonceSecretEnv names the environment variable holding the secret of
	// server nonces (RFC 9449 §9), at least 32 bytes; setting it (or
	// NonceSecretFile) makes nonces required. Give every replica the same
	// secret.
	NonceSecretEnv string `yaml:"nonce_secret_env"`
	// NonceSecretFile is a file holding the nonce secret.
	NonceSecretFile string `yaml:"nonce_secret_file"`
	// NonceLifetime is the slot length of a nonce (accepted in its slot
	// and the next). Zero means the dpop default.
	NonceLifetime time.Duration `yaml:"nonce_lifetime"`
	// NonceSecret is the secret itself, for Go callers.
	NonceSecret []byte `yaml:"-"`
}

// Validation holds token-validation settings of a route (validate
// Config).
type Validation struct {
	// Audiences are accepted besides Resource.
	Audiences []string `yaml:"audiences"`
	// Leeway is the clock skew tolerated on exp, nbf and iat. Zero means
	// 30s; negative means none.
	Leeway time.Duration `yaml:"leeway"`
	// TenantClaim names the claim holding the principal's tenant.
	TenantClaim string `yaml:"tenant_claim"`
	// AllowJWTType accepts tokens typed JWT or untyped (weakens RFC 9068).
	AllowJWTType bool `yaml:"allow_jwt_typ"`
	// AllowSCP reads scopes from scp when scope is absent (Entra, Okta).
	AllowSCP bool `yaml:"allow_scp"`
	// AllowMissingJTI accepts tokens without jti (Entra).
	AllowMissingJTI bool `yaml:"allow_missing_jti"`
	// AllowMissingClientID accepts tokens without client_id or azp.
	AllowMissingClientID bool `yaml:"allow_missing_client_id"`
	// AllowedClients, if set, are the only client IDs accepted.
	AllowedClients []string `yaml:"allowed_clients"`
	// AllowMissingIssuedAt accepts tokens without iat.
	AllowMissingIssuedAt bool `yaml:"allow_missing_issued_at"`
	// AllowMissingSubject accepts tokens without sub (client-credentials
	// grants of some issuers).
	AllowMissingSubject bool `yaml:"allow_missing_subject"`
	// RejectMultipleAudiences refuses tokens whose aud holds more than
	// one value.
	RejectMultipleAudiences bool `yaml:"reject_multiple_audiences"`
	// Algorithms is the JWS alg allow-list of access tokens. Empty means
	// the validate default (RS*, PS*, ES*, EdDSA; never HMAC or none).
	Algorithms []string `yaml:"algorithms"`
	// MaxTokenLifetime refuses tokens whose exp - iat exceeds it (and
	// then requires iat). Zero means unchecked.
	MaxTokenLifetime time.Duration `yaml:"max_token_lifetime"`
	// MaxTokenBytes bounds the raw token. Zero means 8192.
	MaxTokenBytes int `yaml:"max_token_bytes"`
	// RequireKID refuses tokens without a kid header.
	RequireKID bool `yaml:"require_kid"`
	// CacheSize is the number of verified tokens remembered. Zero means
	// 4096; negative disables the cache.
	CacheSize int `yaml:"cache_size"`
	// MaxKeyWait bounds the wait for an issuer's keys in one request. Zero
	// means 6s.
	MaxKeyWait time.Duration `yaml:"max_key_wait"`
}

// StepUp bounds step-up challenges (middleware StepUpLimit).
type StepUp struct {
	// Limit is the number of insufficient_scope challenges per principal
	// and scope set within Window. Zero means 3; negative disables.
	Limit int `yaml:"limit"`
	// Window is the counting window. Zero means 10m.
	Window time.Duration `yaml:"window"`
}

// Assertion configures the proxy's signing key and the issuer of its
// assertions.
type Assertion struct {
	// Issuer is the iss of every assertion. Empty means the origin of the
	// first route's Resource.
	Issuer string `yaml:"issuer"`
	// KeyFile is a PEM file with the signing key (PKCS #8 or SEC 1: an EC
	// P-256 key signs ES256, Ed25519 EdDSA, RSA of 2048 bits or more
	// RS256). Empty means a P-256 key generated at start, which replicas do
	// not share: give every replica the same file.
	KeyFile string `yaml:"key_file"`
	// PublishKeyFiles are PEM files of keys the JWK Set publishes beside
	// the signing key, which never sign: the next key before a rotation
	// (so upstreams know it before the first assertion it signs) and the
	// previous one after it (so assertions it signed stay valid until
	// they expire). A public key ("PUBLIC KEY") or a private key file as
	// for KeyFile. Empty publishes the signing key only (docs/proxy.md,
	// "Rotating the assertion key").
	PublishKeyFiles []string `yaml:"publish_key_files"`
	// JWKSPath is where the proxy serves its public keys as a JWK Set.
	// Empty means "/.well-known/jwks.json".
	JWKSPath string `yaml:"jwks_path"`
	// Key is the signing key itself, for Go callers (crypto/ecdsa,
	// ed25519 or rsa private key).
	Key crypto.Signer `yaml:"-"`
}

// TLS is the certificate of the proxy's own listener (PEM files).
type TLS struct {
	// CertFile is the certificate chain, leaf first. Empty means plain
	// HTTP.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the private key of the leaf. Required with CertFile.
	KeyFile string `yaml:"key_file"`
}

// Timeouts bound upstream connections and answers.
type Timeouts struct {
	// Dial bounds connecting to an upstream. Zero means 5s.
	Dial time.Duration `yaml:"dial"`
	// ResponseHeader bounds the wait for an upstream's answer headers
	// (504 after it). Zero means 60s.
	ResponseHeader time.Duration `yaml:"response_header"`
	// IdleStream ends an answer (an SSE stream above all) that sends no
	// byte for this long, cleanly: the client resumes with Last-Event-ID.
	// Zero means 5m.
	IdleStream time.Duration `yaml:"idle_stream"`
	// StreamWrite bounds each write of an authorized answer to the
	// client (a slow reader is cut after it; a write gets between 15/16
	// of it and all of it). Zero means 30s.
	StreamWrite time.Duration `yaml:"stream_write"`
	// MaxResponseHeaderBytes bounds an upstream's answer headers. Zero
	// means 64 KiB.
	MaxResponseHeaderBytes int64 `yaml:"max_response_header_bytes"`
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Dial == 0 {
		t.Dial = defaultDialTimeout
	}
	if t.ResponseHeader == 0 {
		t.ResponseHeader = defaultResponseHeader
	}
	if t.IdleStream == 0 {
		t.IdleStream = defaultIdleStream
	}
	if t.StreamWrite == 0 {
		t.StreamWrite = defaultStreamWrite
	}
	if t.MaxResponseHeaderBytes == 0 {
		t.MaxResponseHeaderBytes = defaultMaxResponseHeader
	}
	return t
}

func (t Timeouts) check() error {
	if t.Dial < 0 || t.ResponseHeader < 0 || t.IdleStream < 0 || t.StreamWrite < 0 || t.MaxResponseHeaderBytes < 0 {
		return fmt.Errorf("%w: timeouts: negative value", ErrConfig)
	}
	return nil
}

// Pins pins a route's tool definitions (middleware ToolPins;
// docs/policy.md, "Pinned tools"): a tool the upstream lists with a
// definition other than the one first listed (or accepted) is removed
// from lists and its calls are refused, until its new digest is accepted
// here and the configuration reloaded.
type Pins struct {
	// Tools pins every tool the upstream lists. Defaults to false.
	Tools bool `yaml:"tools"`
	// Accepted maps a tool name to the digest an operator accepted for it
	// (64 lower-case hex digits: the "listed" digest of the proxy's log
	// line "tool definition changed"). Needs Tools. Empty means none.
	Accepted map[string]string `yaml:"accepted"`
}

// dpopPolicy parses Route.DPoP.
func dpopPolicy(s string) (middleware.DPoPPolicy, error) {
	switch s {
	case "", "off":
		return middleware.DPoPOff, nil
	case "allowed":
		return middleware.DPoPAllowed, nil
	case "required":
		return middleware.DPoPRequired, nil
	}
	return 0, fmt.Errorf("dpop %q: want off, allowed or required", s)
}

// minNonceSecretBytes is the shortest DPoP nonce secret validate/dpop
// accepts.
const minNonceSecretBytes = 32

// checkIssuers checks Config.Issuers against the routes.
func checkIssuers(c *Config) error {
	for iss, is := range c.Issuers {
		at := fmt.Sprintf("issuers[%s]", iss)
		if !slices.ContainsFunc(c.Routes, func(r Route) bool { return slices.Contains(r.Issuers, iss) }) {
			return fmt.Errorf("%w: %s: no route lists this issuer in its issuers", ErrConfig, at)
		}
		if is.JWKSURL != "" {
			if _, err := fetch.CheckURL(is.JWKSURL, true); err != nil {
				return fmt.Errorf("%w: %s.jwks_url %q: must be https, or http on a loopback host", ErrConfig, at, is.JWKSURL)
			}
		}
		if is.RefreshInterval < 0 {
			return fmt.Errorf("%w: %s.refresh_interval: negative", ErrConfig, at)
		}
		in := &is.Introspection
		if is.OpaqueOnly {
			if !in.enabled() {
				return fmt.Errorf("%w: %s.opaque_only: its tokens can only be introspected; configure introspection (client_id and its credential)", ErrConfig, at)
			}
			if is.JWKSURL != "" {
				return fmt.Errorf("%w: %s: opaque_only fetches no keys; remove jwks_url", ErrConfig, at)
			}
		}
		if !in.enabled() {
			if in.Endpoint != "" || in.ClientSecret != "" || in.PrivateKeyFile != "" || in.PrivateKey != nil {
				return fmt.Errorf("%w: %s.introspection: client_id is required (the proxy's client at the authorization server)", ErrConfig, at)
			}
			continue
		}
		if in.Endpoint != "" {
			if _, err := fetch.CheckURL(in.Endpoint, true); err != nil {
				return fmt.Errorf("%w: %s.introspection.endpoint %q: must be https, or http on a loopback host", ErrConfig, at, in.Endpoint)
			}
		}
		m, err := authMethod(in.AuthMethod)
		if err != nil {
			return fmt.Errorf("%w: %s.introspection.%w", ErrConfig, at, err)
		}
		switch {
		case m == "private_key_jwt" && in.PrivateKey == nil && in.PrivateKeyFile == "":
			return fmt.Errorf("%w: %s.introspection: private_key_jwt needs private_key_file", ErrConfig, at)
		case m != "private_key_jwt" && in.ClientSecret == "":
			return fmt.Errorf("%w: %s.introspection: %s needs a client secret (client_secret_env or client_secret_file)", ErrConfig, at, m)
		case in.Timeout < 0 || in.MaxCacheTTL < 0 || in.InactiveCacheTTL < 0:
			return fmt.Errorf("%w: %s.introspection: negative duration", ErrConfig, at)
		}
	}
	for i, r := range c.Routes {
		var with []string
		for _, iss := range r.Issuers {
			if is, ok := c.Issuers[iss]; ok && is.Introspection.enabled() {
				with = append(with, iss)
			}
		}
		if len(with) > 1 {
			return fmt.Errorf("%w: routes[%d]: issuers %s all have introspection; at most one may (an opaque token names no issuer)", ErrConfig, i, strings.Join(with, " and "))
		}
	}
	return nil
}

// authMethod parses Introspection.AuthMethod.
func authMethod(s string) (string, error) {
	switch s {
	case "", "client_secret_basic":
		return "client_secret_basic", nil
	case "client_secret_post":
		return "client_secret_post", nil
	case "private_key_jwt":
		return "private_key_jwt", nil
	}
	return "", fmt.Errorf("auth_method %q: want client_secret_basic, client_secret_post or private_key_jwt", s)
}

// checkRoute checks what New cannot leave to mcpguard.New.
func checkRoute(i int, r *Route) error {
	at := fmt.Sprintf("routes[%d]", i)
	if r.Resource == "" {
		return fmt.Errorf("%w: %s.resource is required (the public URL of the MCP endpoint, e.g. https://mcp.example.com/mcp)", ErrConfig, at)
	}
	if _, err := fetch.CheckURL(r.Resource, true); err != nil {
		return fmt.Errorf("%w: %s.resource %q: must be https, or http on a loopback host", ErrConfig, at, r.Resource)
	}
	if r.Stdio.enabled() {
		if err := checkStdio(at, r); err != nil {
			return err
		}
	} else if r.Upstream == "" {
		return fmt.Errorf("%w: %s.upstream is required (the MCP server's URL, e.g. http://127.0.0.1:3000/mcp)", ErrConfig, at)
	}
	u, err := url.Parse(r.Upstream)
	unix := err == nil && u.Scheme == "unix"
	if r.Stdio.enabled() {
		u, err, unix = stdioTarget, nil, false
	}
	if unix {
		if _, err := parseUnixUpstream(u); err != nil {
			return fmt.Errorf("%w: %s.upstream %q: %w", ErrConfig, at, r.Upstream, err)
		}
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%w: %s.upstream %q: want an http or https URL without user info or fragment, or unix:///path/to/server.sock", ErrConfig, at, r.Upstream)
	}
	if len(r.Issuers) == 0 {
		return fmt.Errorf("%w: %s.issuers is required (the issuer URL of your authorization server)", ErrConfig, at)
	}
	for j, iss := range r.Issuers {
		if _, err := fetch.CheckURL(iss, true); err != nil {
			return fmt.Errorf("%w: %s.issuers[%d] %q: must be https, or http on a loopback host", ErrConfig, at, j, iss)
		}
	}
	if len(r.Pins.Accepted) > 0 && !r.Pins.Tools {
		return fmt.Errorf("%w: %s.pins.accepted needs pins.tools: true", ErrConfig, at)
	}
	switch r.Lists {
	case "", "annotate", "hide", "off":
	default:
		return fmt.Errorf("%w: %s.lists %q: want annotate, hide or off", ErrConfig, at, r.Lists)
	}
	if _, err := dpopPolicy(r.DPoP); err != nil {
		return fmt.Errorf("%w: %s.%w", ErrConfig, at, err)
	}
	if n := len(r.DPoPProof.NonceSecret); n > 0 && n < minNonceSecretBytes {
		return fmt.Errorf("%w: %s.dpop_proof.nonce_secret: %d bytes; want at least %d random bytes (e.g. openssl rand -base64 48)", ErrConfig, at, n, minNonceSecretBytes)
	}
	id := &r.Identity
	switch id.Mode {
	case "", modeAssertion:
	case modeHeaders:
		if !unix && !fetch.IsLoopbackHost(u.Hostname()) {
			return fmt.Errorf("%w: %s.identity.mode headers: plain identity headers are allowed only for a loopback or unix-socket upstream; use assertion", ErrConfig, at)
		}
	case modeExchange:
		ex := &id.Exchange
		if ex.ClientID == "" {
			return fmt.Errorf("%w: %s.identity.exchange: client_id is required", ErrConfig, at)
		}
		if _, err := fetch.CheckURL(ex.TokenEndpoint, true); ex.TokenEndpoint != "" && err != nil {
			return fmt.Errorf("%w: %s.identity.exchange.token_endpoint: must be https, or http on a loopback host", ErrConfig, at)
		}
		if ex.ClientSecret == "" {
			return fmt.Errorf("%w: %s.identity.exchange: no client secret (client_secret_env or client_secret_file)", ErrConfig, at)
		}
	default:
		return fmt.Errorf("%w: %s.identity.mode %q: want assertion, exchange or headers", ErrConfig, at, id.Mode)
	}
	if id.TTL < 0 || id.TTL > maxAssertionTTL {
		return fmt.Errorf("%w: %s.identity.ttl %s: at most %s", ErrConfig, at, id.TTL, maxAssertionTTL)
	}
	if id.Header != "" && (http.CanonicalHeaderKey(id.Header) != http.CanonicalHeaderKey(strings.TrimSpace(id.Header)) || strings.ContainsAny(id.Header, " :\t")) {
		return fmt.Errorf("%w: %s.identity.header %q: not a header name", ErrConfig, at, id.Header)
	}
	if r.MaxBodyBytes < 0 {
		return fmt.Errorf("%w: %s.max_body_bytes: negative", ErrConfig, at)
	}
	if r.MaxStreamsPerUser < 0 {
		return fmt.Errorf("%w: %s.max_streams_per_user: negative", ErrConfig, at)
	}
	if err := checkForwardHeaders(r.ForwardHeaders, cmp.Or(http.CanonicalHeaderKey(id.Header), "Authorization")); err != nil {
		return fmt.Errorf("%w: %s.%w", ErrConfig, at, err)
	}
	if r.RateLimit.Principal != "" {
		if _, err := parseLimit(r.RateLimit.Principal); err != nil {
			return fmt.Errorf("%w: %s.rate_limit.principal: %w", ErrConfig, at, err)
		}
	}
	for name, l := range r.RateLimit.Tools {
		if _, err := parseLimit(l); err != nil {
			return fmt.Errorf("%w: %s.rate_limit.tools[%s]: %w", ErrConfig, at, name, err)
		}
		if _, listed := r.Operations.Tools[name]; !listed {
			return fmt.Errorf("%w: %s.rate_limit.tools[%s]: list the tool in operations.tools too (with [] if it needs no scope), so that its name is known", ErrConfig, at, name)
		}
	}
	return nil
}

// validateConfig builds the validate.Config of a route (Issuers and
// Audiences are filled by mcpguard.New).
func (r *Route) validateConfig(now func() time.Time) validate.Config {
	v := r.Validation
	vc := validate.Config{
		Leeway:                  v.Leeway,
		TenantClaim:             v.TenantClaim,
		AllowJWTType:            v.AllowJWTType,
		AllowSCP:                v.AllowSCP,
		AllowMissingJTI:         v.AllowMissingJTI,
		AllowMissingClientID:    v.AllowMissingClientID,
		AllowedClients:          slices.Clone(v.AllowedClients),
		AllowMissingIssuedAt:    v.AllowMissingIssuedAt,
		AllowMissingSubject:     v.AllowMissingSubject,
		RejectMultipleAudiences: v.RejectMultipleAudiences,
		MaxTokenLifetime:        v.MaxTokenLifetime,
		MaxTokenBytes:           v.MaxTokenBytes,
		RequireKID:              v.RequireKID,
		CacheSize:               v.CacheSize,
		MaxKeyWait:              v.MaxKeyWait,
		Now:                     now,
	}
	for _, a := range v.Algorithms {
		vc.Algorithms = append(vc.Algorithms, jose.SignatureAlgorithm(a))
	}
	if len(v.Audiences) > 0 {
		vc.Audiences = append([]string{r.Resource}, v.Audiences...)
	}
	return vc
}

// policy converts Operations to the middleware's policy. Its resource
// rules and public operations are Go conversions, which stop compiling
// when the middleware's types gain a field; TestOperationsPolicy checks
// the rest, field by field.
func (o Operations) policy() middleware.OperationPolicy {
	p := middleware.OperationPolicy{
		Methods:      o.Methods,
		Tools:        o.Tools,
		Prompts:      o.Prompts,
		DenyUnlisted: o.DenyUnlisted,
		Public:       middleware.PublicOperations(o.Public),
	}
	for _, r := range o.Resources {
		p.Resources = append(p.Resources, middleware.ResourceRule(r))
	}
	return p
}
