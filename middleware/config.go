package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"

	"github.com/mcpguard/mcpguard/internal/mwdefault"
	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// Defaults applied by [New] to zero-valued [Config] fields (the field
// comments state them).
const (
	// defaultMaxBodyBytes bounds the JSON-RPC body read when
	// Config.MaxBodyBytes is zero: 1 MiB.
	defaultMaxBodyBytes = mwdefault.MaxBodyBytes
	// defaultStepUpLimit is the number of insufficient_scope challenges
	// per principal and scope set within the window when
	// Config.StepUpLimit is zero.
	defaultStepUpLimit = mwdefault.StepUpLimit
	// defaultStepUpWindow is the step-up counting window when
	// Config.StepUpWindow is zero.
	defaultStepUpWindow = mwdefault.StepUpWindow
	// defaultRetryAfter is the Retry-After of a 503 when Config.RetryAfter
	// is zero.
	defaultRetryAfter = 30 * time.Second
	// defaultStepUpKeys is the capacity of the in-memory [StepUpStore].
	defaultStepUpKeys = 10000
)

// TokenValidator validates a raw bearer token and returns its verified
// claims. [*validate.Validator] satisfies it. An error wrapping
// validate.ErrKeysUnavailable (or a context error) is answered 503; any
// other error, and nil claims, 401 invalid_token. Error text goes only to
// Config.Logger.
type TokenValidator interface {
	Validate(ctx context.Context, raw string) (*validate.Claims, error)
}

var _ TokenValidator = (*validate.Validator)(nil)

// LegacyScopeStrategy chooses the scope list of a 403 insufficient_scope
// answer to a request of MCP revision 2025-11-25 or older (an
// MCP-Protocol-Version header before 2026-07-28, or none). Requests of
// 2026-07-28 or later always get [ScopeOperationOnly] (MCP 2026-07-28
// §Scope Challenge Handling: the client accumulates scopes).
type LegacyScopeStrategy int

const (
	// ScopeUnion lists the operation's scopes followed by every scope the
	// token already has except offline_access: the "recommended approach"
	// of MCP 2025-11-25 §Runtime Insufficient Scope Errors, so that
	// clients that replace their scope set do not lose granted scopes.
	ScopeUnion LegacyScopeStrategy = iota
	// ScopeOperationOnly lists only the operation's scopes.
	ScopeOperationOnly
)

// ResourceRule gives the scopes a resources/read of a URI needs.
type ResourceRule struct {
	// URI is compared byte for byte with the canonical form of
	// params.uri: the URI without its query and fragment, which is what
	// path-resolving resource handlers serve (go-sdk's file handler, any
	// handler that parses the URI). So "config.json?x=1" and
	// "config.json#x" need the scopes of the exact rule "config.json".
	// Required; a URI with a query or fragment, or an exact URI not in
	// canonical form, is refused by New.
	URI string
	// Prefix makes URI a prefix: the rule matches every canonical
	// params.uri that starts with it. An exact rule wins over prefix
	// rules, and the longest matching prefix wins among them. While any
	// resource rule exists, a params.uri that cannot be canonicalised is
	// refused as errInvalidMessage: not absolute or not parsable by
	// net/url, a "." or ".." segment (also percent-encoded), an empty
	// segment ("//" in the path), a backslash (also encoded), a
	// percent-encoded unreserved character or "/", upper case in the
	// scheme or host, or bytes net/url would re-encode (raw non-ASCII,
	// spaces). So "file:///public/../secret", "file:///public//secret"
	// and "file:///public/%73ecret" cannot borrow the scopes of
	// "file:///public/", and "config%2Ejson" cannot escape an exact rule
	// for "config.json".
	Prefix bool
	// Scopes are the scopes needed, on top of the base and method scopes.
	Scopes []string
}

// OperationPolicy gives the scopes each MCP operation needs, on top of
// Config.Scopes. It is applied to POST bodies (the JSON-RPC message);
// other requests need the base scopes only.
//
// Every client-to-server method of MCP 2025-11-25 and 2026-07-28 has a
// documented default (docs/policy.md, "Defaults of every method"): its
// Methods entry, plus what it inherits (resources/subscribe needs what
// resources/read of the same URI needs; completion/complete of a prompt
// needs what prompts/get of it needs, of a resource template the Methods
// scopes of resources/read; tasks/* need the Methods scopes of
// tools/call). A method neither in Methods nor defined by MCP needs the
// base scopes only. A tools/call, prompts/get, resources/read or
// resources/subscribe whose name (or URI) is not listed needs the base and
// method scopes. With DenyUnlisted both are refused with a terminal 403
// instead. Names are compared byte for byte.
type OperationPolicy struct {
	// Methods maps a JSON-RPC method ("tools/list", "tools/call", …) to the
	// scopes it needs. Nil means none.
	Methods map[string][]string
	// Tools maps a tools/call params.name to the scopes it needs.
	Tools map[string][]string
	// Prompts maps a prompts/get params.name to the scopes it needs; a
	// completion/complete whose params.ref names the prompt needs them
	// too.
	Prompts map[string][]string
	// Resources gives the scopes of resources/read by params.uri.
	Resources []ResourceRule
	// DenyUnlisted refuses requests whose method is neither in Methods
	// nor defined by MCP (docs/policy.md), tools/call, prompts/get,
	// resources/read and resources/subscribe requests whose name or URI
	// matches no entry of Tools, Prompts or Resources, and
	// completion/complete requests of a prompt Prompts does not list (or
	// without a params.ref of type ref/prompt or ref/resource): 403
	// {"error":"access_denied"}, errNotListed, with a challenge that
	// invites no new authorization (resource_metadata only). Responses
	// (no method) are never refused by it. Defaults to false: such
	// requests need the base (and method) scopes, and the MCP server
	// answers an unknown method or name itself.
	DenyUnlisted bool
	// Public lists operations served without a token, to an anonymous
	// [Principal]; read the trade-off at [PublicOperations] before using
	// it. The zero value lists none: every request needs a valid token.
	Public PublicOperations
}

// Config configures a [Middleware]. [New] copies it, slices and maps
// included, so later changes by the caller have no effect.
type Config struct {
	// Validator validates bearer tokens. Required. Configure it with
	// Metadata.Resource among its audiences (RFC 8707 §2).
	Validator TokenValidator

	// Metadata is the RFC 9728 protected-resource metadata. Required and
	// checked by [prm.Handler]. Metadata.Resource is the canonical resource
	// identifier; the resource_metadata URL of every challenge is derived
	// from it once, in New (RFC 9728 §3.1), never from the request's Host
	// or X-Forwarded-* headers. A nil Metadata.ScopesSupported is filled
	// from the policy: Scopes, then every scope of Operations (methods,
	// tools, prompts and resources, each map in key order), de-duplicated,
	// and then the scopes of each [Middleware.Protect] and
	// [Middleware.RequireScopes] route as it is built, so that clients
	// sizing a registration from it can step up; a non-nil one is
	// published as given (RFC 9728 §2 lets a resource advertise fewer).
	Metadata prm.Metadata

	// Scopes are the base scopes every request needs, also sent as the
	// "scope" of the 401 challenge (MCP §Scope Selection Strategy). Nil
	// means none. "offline_access" is refused: it is not a resource
	// requirement (MCP 2026-07-28 §Refresh Tokens).
	Scopes []string

	// Operations gives per-MCP-operation scopes. The zero value adds none.
	Operations OperationPolicy

	// Rules are policy rules beyond scopes, in CEL (docs/policy.md,
	// "Rules"), checked and compiled by New: a rule that does not
	// compile, names an undeclared variable, is not of type bool or may
	// cost more than the bound refuses New with its name and position.
	// Nil means none.
	Rules []Rule

	// TenantArgument, when set, names a tools/call and prompts/get
	// argument that must equal the caller's tenant (Principal.Tenant)
	// whenever a request carries it: a shorthand for the deny rule
	// "tenant_argument" (docs/policy.md, "The tenant rule"). A request
	// with the argument from a token without a tenant is denied too.
	// Empty means no such rule.
	TenantArgument string

	// Pins pins the definitions of the tools the handler lists
	// ([ToolPins], docs/policy.md, "Pinned tools"). The zero value pins
	// nothing.
	Pins ToolPins

	// Lists chooses what list answers (tools/list, prompts/list,
	// resources/list, resources/templates/list) show, applied by the
	// middleware to every answer of the handler it wraps: [ListAnnotate] (the
	// zero value: everything a client could obtain, annotated with the
	// scopes it needs), [ListHide] (only what the token may call) or
	// [ListOff]. In every mode, entries no token could reach are left
	// out.
	Lists ListMode

	// ScopeImplies declares scope hierarchies: a key scope implies each
	// listed scope, transitively (cycles are allowed). A token holding a
	// broader scope satisfies every narrower one, for every revision (MCP
	// 2026-07-28 §Step-Up Authorization Flow: servers MUST account for
	// hierarchies). Challenges still list the narrower scopes the operation
	// names. Nil means no implications.
	ScopeImplies map[string][]string

	// LegacyScopes is the 403 scope list strategy for requests older than
	// MCP 2026-07-28. The zero value is [ScopeUnion].
	LegacyScopes LegacyScopeStrategy

	// StepUpLimit bounds the insufficient_scope challenges sent to one
	// principal (issuer, subject, client) for one scope set within
	// StepUpWindow; past it the answer is a terminal 403 whose challenge
	// invites no new authorization (errStepUpExhausted). The bound is
	// for loops, not users: an authorized request of the principal whose
	// token satisfies a scope set it was challenged for resets that
	// counter (StepUpStore.Reset), so a user who steps up successfully is
	// never refused however often it starts over. Zero means
	// 3; negative disables the bound.
	StepUpLimit int
	// StepUpWindow is the fixed window of StepUpLimit, starting at the
	// first challenge. Zero means 10 minutes.
	StepUpWindow time.Duration
	// StepUpStore counts challenges. Nil means an in-memory store of
	// 10000 counters, shared fairly between clients; share a store
	// between replicas to bound step-up across them.
	//
	// Which counters to reset is known in process: each Middleware
	// remembers the (principal, scope set) pairs it challenged within
	// the window (at most 10000 principals, shared fairly between
	// clients, as the in-memory store's keys are), so that an authorized
	// request makes no store call and allocates nothing more when nothing
	// is pending. With several replicas sharing a store, a challenge sent
	// by replica A is reset by the first success of that principal with
	// those scopes that reaches A; a success that reaches only B resets
	// nothing (B did not challenge), so the shared count stays as it was.
	// That can only make the terminal answer come sooner, never let a
	// request through or remove the bound: it fails closed. Behind a load
	// balancer that spreads a principal's requests, its later successes
	// reach A within a few requests; with sticky routing, at once.
	StepUpStore StepUpStore

	// MaxBodyBytes bounds the POST body read to find the JSON-RPC
	// operation; larger bodies get 413. Zero means 1 MiB
	// (1048576 bytes).
	MaxBodyBytes int64

	// AllowedOrigins lists the origins ("https://app.example.com") allowed
	// besides the origin of Metadata.Resource. A request with an Origin
	// header matching neither gets 403 (DNS-rebinding protection, MCP
	// Streamable HTTP §Security Warning); a request without Origin is
	// allowed. The single entry "*" allows every origin, which DISABLES
	// this protection: use it only behind a proxy that checks Origin.
	// Nil means only the resource's origin. A request from an allowed
	// origin also gets CORS answers, so that browser-based clients can
	// read them: Access-Control-Allow-Origin (that origin), Vary: Origin,
	// Access-Control-Expose-Headers (WWW-Authenticate, Mcp-Session-Id,
	// DPoP-Nonce, Retry-After), and a CORS preflight (OPTIONS with
	// Access-Control-Request-Method) is answered 204 before any token
	// check, with no decision reported. "null" is never echoed, and
	// credentials mode is never enabled.
	AllowedOrigins []string

	// Sessions configures the binding of MCP sessions to the principal
	// that created them, which is always on ([SessionConfig],
	// docs/sessions.md). The zero value binds with the defaults.
	Sessions SessionConfig

	// DPoP configures DPoP-bound access tokens (RFC 9449; dpop.go). The
	// zero value is DPoPOff: Bearer only, as without this field.
	DPoP DPoPConfig

	// Realm is the RFC 6750 §3 realm of every challenge. Empty omits it.
	Realm string

	// RetryAfter is sent in Retry-After (whole seconds, rounded up) with
	// the 503 answered while token keys are unavailable. Zero means
	// 30s.
	RetryAfter time.Duration

	// Logger receives refusals with their reason, internal cause, MCP
	// method and tool labels, client and issuer (never the token): Info
	// for client errors, Warn for 503s, exhausted step-ups and
	// misconfiguration, so the default slog level shows them, at most
	// RefusalLogRate a second per reason. Nil discards. Client responses
	// never carry internal text.
	Logger *slog.Logger
	// RefusalLogRate bounds the refusal records per [Reason] per second
	// (Now's clock); the excess is counted and reported as "suppressed"
	// on the next record, so a flood of bad tokens cannot fill the disk.
	// Zero means 5; negative logs every refusal.
	RefusalLogRate int

	// Now returns the current time for the step-up window. Nil means
	// time.Now.
	Now func() time.Time

	// OnDecision, if set, receives every decision, for metrics, logs and
	// traces: once for each request [Middleware.Handler] passes to the
	// next handler (Status 0, "authorized"), and once for each
	// refusal the middleware answers, from Handler, from
	// [Middleware.RequireScopes] and from [Middleware.Challenge]. So a
	// request that Handler authorized and a route or tool handler then
	// refused is reported twice; count refusals as Status != 0.
	// [Middleware.Authenticate] and the metadata handler report nothing.
	//
	// It is called synchronously on the request's goroutine, with the
	// request's context, after the answer is decided and before it is
	// written (for an authorized request, before next is called). It must
	// be fast and must not block: it delays every request. It must not
	// retain or modify the Decision's slices or Principal. Nil means no
	// reporting; it then costs nothing.
	OnDecision func(ctx context.Context, d Decision)
}

// withDefaults returns a deep copy of c with defaults filled in.
func (c Config) withDefaults() Config {
	c.Scopes = slices.Clone(c.Scopes)
	c.Operations.Methods = cloneScopeMap(c.Operations.Methods)
	c.Operations.Tools = cloneScopeMap(c.Operations.Tools)
	c.Operations.Prompts = cloneScopeMap(c.Operations.Prompts)
	rules := make([]ResourceRule, len(c.Operations.Resources))
	for i, r := range c.Operations.Resources {
		r.Scopes = slices.Clone(r.Scopes)
		rules[i] = r
	}
	c.Operations.Resources = rules
	c.Operations.Public = c.Operations.Public.clone()
	c.ScopeImplies = cloneScopeMap(c.ScopeImplies)
	c.Rules = slices.Clone(c.Rules)
	for i := range c.Rules {
		r := &c.Rules[i]
		r.Methods, r.Tools, r.Prompts = slices.Clone(r.Methods), slices.Clone(r.Tools), slices.Clone(r.Prompts)
		r.Resources, r.RequireScopes = slices.Clone(r.Resources), slices.Clone(r.RequireScopes)
	}
	if c.Metadata.ScopesSupported == nil {
		c.Metadata.ScopesSupported = c.policyScopes()
	}
	c.AllowedOrigins = slices.Clone(c.AllowedOrigins)
	c.Pins.Accepted = maps.Clone(c.Pins.Accepted)
	if c.StepUpLimit == 0 {
		c.StepUpLimit = defaultStepUpLimit
	}
	if c.StepUpWindow == 0 {
		c.StepUpWindow = defaultStepUpWindow
	}
	if c.StepUpStore == nil {
		c.StepUpStore = newMemoryStepUpStore(defaultStepUpKeys)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = defaultMaxBodyBytes
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = defaultRetryAfter
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Sessions = c.Sessions.withDefaults()
	return c
}

func cloneScopeMap(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

// check reports the first problem of a defaulted config (Metadata is
// checked by prm.Handler in New).
func (c Config) check() error {
	if c.Validator == nil {
		return fmt.Errorf("%w: no Validator", errConfig)
	}
	// A typed nil ((*validate.Validator)(nil)) passes == nil and would
	// panic on the first request.
	if rv := reflect.ValueOf(c.Validator); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fmt.Errorf("%w: nil Validator", errConfig)
	}
	if err := checkScopes("Scopes", c.Scopes); err != nil {
		return err
	}
	op := c.Operations
	for _, m := range []struct {
		name string
		m    map[string][]string
	}{{"Operations.Methods", op.Methods}, {"Operations.Tools", op.Tools}, {"Operations.Prompts", op.Prompts}} {
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			if k == "" {
				return fmt.Errorf("%w: %s has an empty name", errConfig, m.name)
			}
			if err := checkScopes(m.name+"["+k+"]", m.m[k]); err != nil {
				return err
			}
		}
	}
	type ruleKey struct {
		uri    string
		prefix bool
	}
	seen := map[ruleKey]bool{}
	for i, r := range op.Resources {
		if r.URI == "" {
			return fmt.Errorf("%w: Operations.Resources[%d] has an empty URI", errConfig, i)
		}
		k := ruleKey{r.URI, r.Prefix}
		if seen[k] {
			return fmt.Errorf("%w: Operations.Resources[%d] repeats a rule", errConfig, i)
		}
		seen[k] = true
		// Rules match the canonical form (no query, no fragment): a rule
		// that is not in it could never match.
		if strings.ContainsAny(r.URI, "?#") {
			return fmt.Errorf("%w: Operations.Resources[%d] has a query or fragment, which matching ignores", errConfig, i)
		}
		if key, ok := canonicalResource(r.URI); !r.Prefix && (!ok || key != r.URI) {
			return fmt.Errorf("%w: Operations.Resources[%d] is not a canonical URI", errConfig, i)
		}
		if err := checkScopes(fmt.Sprintf("Operations.Resources[%d]", i), r.Scopes); err != nil {
			return err
		}
	}
	if err := checkPublic(&op); err != nil {
		return err
	}
	if err := checkPinConfig(&c.Pins); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(c.ScopeImplies)) {
		if !scopetoken.Valid(k) {
			return fmt.Errorf("%w: ScopeImplies has an invalid scope key", errConfig)
		}
		for _, s := range c.ScopeImplies[k] {
			if !scopetoken.Valid(s) {
				return fmt.Errorf("%w: ScopeImplies[%s] has an invalid scope", errConfig, k)
			}
		}
	}
	switch {
	case c.LegacyScopes != ScopeUnion && c.LegacyScopes != ScopeOperationOnly:
		return fmt.Errorf("%w: unknown LegacyScopes strategy", errConfig)
	case c.Lists < ListAnnotate || c.Lists > ListOff:
		return fmt.Errorf("%w: unknown Lists mode", errConfig)
	case c.StepUpWindow < 0:
		return fmt.Errorf("%w: negative StepUpWindow", errConfig)
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("%w: negative MaxBodyBytes", errConfig)
	case c.RetryAfter < 0:
		return fmt.Errorf("%w: negative RetryAfter", errConfig)
	case c.Realm != "" && !isVisible(c.Realm):
		return fmt.Errorf("%w: Realm must be visible ASCII", errConfig)
	}
	if err := c.Sessions.check(); err != nil {
		return fmt.Errorf("%w: %w", errConfig, err)
	}
	return nil
}

// checkScopes refuses invalid scope tokens and offline_access in a
// requirement: a challenge can never ask for offline_access (it is dropped
// when rendering), so a client could never satisfy it.
func checkScopes(field string, scopes []string) error {
	for _, s := range scopes {
		if !scopetoken.Valid(s) {
			return fmt.Errorf("%w: %s has an invalid scope token", errConfig, field)
		}
		if s == offlineAccess {
			return fmt.Errorf("%w: %s requires offline_access, which is not a resource scope", errConfig, field)
		}
	}
	return nil
}

const offlineAccess = "offline_access"

// isVisible reports whether s consists of SP and VCHAR only.
func isVisible(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// policyScopes returns Scopes and every scope of Operations,
// de-duplicated in a stable order, without offline_access (which check
// refuses anyway: it is no resource requirement). Nil when there are none.
func (c Config) policyScopes() []string {
	out := appendUnique(nil, c.Scopes...)
	for _, m := range []map[string][]string{c.Operations.Methods, c.Operations.Tools, c.Operations.Prompts} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = appendUnique(out, m[k]...)
		}
	}
	for _, r := range c.Operations.Resources {
		out = appendUnique(out, r.Scopes...)
	}
	for _, r := range c.Rules {
		out = appendUnique(out, r.RequireScopes...)
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "offline_access" })
}
