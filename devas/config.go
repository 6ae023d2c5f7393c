package devas

import (
	"crypto"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/cimd"
)

// Defaults.
const (
	// defaultSubject and defaultTenant identify the auto-approved
	// development user.
	defaultSubject = "dev-user"
	defaultTenant  = "tenant-a"
	// defaultRefreshTokenTTL is the refresh token lifetime.
	defaultRefreshTokenTTL = 24 * time.Hour
	// codeTTL is the authorization code lifetime (RFC 6749 §4.1.2
	// recommends at most 10 minutes).
	codeTTL = 60 * time.Second
	// consentTTL is how long a consent page stays valid. The page's form
	// carries the pending request, sealed with a per-process key, so
	// pending consent takes no server memory; a submitted form is
	// remembered (at most 4096, oldest forgotten first) so that it is
	// accepted once.
	consentTTL = 10 * time.Minute
	// defaultMaxRegistrations is the default Config.MaxRegistrations:
	// a registration takes at most 32 KiB (32 KiB), so the
	// built-in store holds at most 32 MiB.
	defaultMaxRegistrations = 1024
	// defaultRegistrationTTL is the default Config.RegistrationTTL.
	defaultRegistrationTTL = 24 * time.Hour
	// offlineAccess is the scope that asks for a refresh token (OpenID
	// Connect Core §11, MCP SEP-2207).
	offlineAccess = "offline_access"
)

// Config configures [New]. It is copied; changing it afterwards has no
// effect.
type Config struct {
	// Issuer is the exact issuer identifier (RFC 8414 §2), e.g.
	// "http://127.0.0.1:9000". Required. It must be https, or http on a
	// loopback host (127.0.0.1, [::1], localhost); it must not have a
	// query, fragment, userinfo or trailing "/". Endpoints live under it:
	// Issuer+"/authorize", "/token", "/jwks" and "/register".
	Issuer string
	// Resources are the canonical resource URIs (RFC 8707) this server
	// issues tokens for. Required, non-empty. Every authorization request
	// must carry a resource parameter naming one of them exactly; it
	// becomes the token's aud.
	Resources []string
	// Scopes are published as scopes_supported. Requests for other scopes
	// fail with invalid_scope. Nil means no scope can be requested.
	// offline_access is added when RefreshTokens is on, and refused here
	// when it is off. A client may request any of them: the scope a
	// client registered is a ceiling only for Clients (pre-registered by
	// the operator), never for dynamically registered clients or Client
	// ID Metadata Documents, which register with the scope of the first
	// challenge and must be able to step up (see GrantScopes).
	Scopes []string
	// GrantScopes decides which of the requested scopes are granted. It
	// may drop scopes (RFC 6749 §3.3 partial grant: the token response
	// then lists the scopes granted); scopes it adds that are not in
	// Scopes are ignored. If it grants nothing while something was
	// requested, the request fails with access_denied. Nil grants what is
	// requested, so step-up authorization can be exercised.
	GrantScopes func(clientID, subject string, requested []string) []string
	// Subject and Tenant identify the development user every request is
	// approved for. Empty means "dev-user" and "tenant-a".
	// Tokens carry them as "sub" and "tenant".
	Subject string
	Tenant  string
	// AllowLoginHint lets an authorization request choose its user with
	// login_hint=subject@tenant (or login_hint=subject for the default
	// tenant), so that tests can obtain tokens for several users and
	// tenants. Both parts are 1 to 64 characters of [A-Za-z0-9._~+-].
	// DANGEROUS: anyone who can reach /authorize can then act as anyone.
	// Off by default: login_hint is ignored.
	AllowLoginHint bool
	// AutoApprove skips the consent page and redirects at once.
	// DANGEROUS outside tests: any page can then obtain codes for the
	// development user. Off by default: a consent page (with a CSRF
	// token) asks for approval.
	AutoApprove bool

	// Registry looks clients up. If nil, one is built from Clients, CIMD
	// (unless DisableCIMD) and, with EnableDCR, DCRStore.
	Registry *cimd.Registry
	// Clients are pre-registered clients, used when Registry is nil. Empty
	// grant_types mean ["authorization_code"], empty response_types
	// ["code"], and an empty token_endpoint_auth_method "none" (or
	// "client_secret_basic" for a client given a secret with
	// [cimd.Client.SetSecret]).
	Clients []cimd.Client
	// CIMD configures the Client ID Metadata Document resolver built when
	// Registry is nil. Tests set InsecureAllowLoopback and RootCAs to serve
	// documents from an httptest TLS server. Its Now defaults to Now.
	CIMD cimd.ResolverConfig
	// DisableCIMD turns Client ID Metadata Documents off: no resolver is
	// built and client_id_metadata_document_supported is not advertised.
	// Set it when Registry has no resolver.
	DisableCIMD bool
	// EnableDCR serves legacy RFC 7591 dynamic registration (deprecated by
	// MCP 2026-07-28) at Issuer+"/register" through [cimd.DCRHandler].
	EnableDCR bool
	// DCRStore holds dynamically registered clients. If nil and Registry
	// is nil, an in-memory store bounded by MaxRegistrations and
	// RegistrationTTL is used. Required with EnableDCR when Registry is
	// set, and must then be the Registry's store (bounding it is then the
	// caller's job).
	DCRStore cimd.Store
	// MaxRegistrations caps the dynamically registered clients the
	// built-in store keeps (registration is unauthenticated; each client
	// takes at most 32 KiB). A registration when the store
	// is full first drops expired clients, then the oldest one. Zero
	// means 1024. Ignored when DCRStore is set.
	MaxRegistrations int
	// RegistrationTTL is how long the built-in store keeps a dynamically
	// registered client; after it, the client_id is unknown
	// (invalid_client) and the client must register again, and an issued
	// client_secret expires with it (client_secret_expires_at). Zero
	// means 24 h. Ignored when DCRStore is set.
	RegistrationTTL time.Duration

	// TokenTTL is the access token lifetime. Zero means
	// 1 h.
	TokenTTL time.Duration
	// RefreshTokens issues refresh tokens to clients whose grant_types
	// include refresh_token, rotated on every use; reuse of any spent
	// refresh token of a family revokes the whole family (OAuth 2.1
	// §4.3.1), and so does a second presentation of the authorization
	// code it came from. A rotation replaces the family's token in place,
	// so refreshing never needs room; at most 16384 families live at
	// once, and a code exchange while all are live gets an access token
	// without a refresh token. Off by default.
	RefreshTokens bool
	// RefreshTokenTTL is the refresh token lifetime. Zero means
	// 24 h.
	RefreshTokenTTL time.Duration

	// SigningAlgorithm signs access tokens. Empty means ES256. Supported:
	// ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA.
	SigningAlgorithm jose.SignatureAlgorithm
	// Key is the signing key: an *ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey matching SigningAlgorithm. If nil, a new key is
	// generated with crypto/rand by New.
	Key crypto.Signer
	// KeyID is the "kid" of the key. Empty means its RFC 7638 thumbprint.
	KeyID string

	// TrustedIdPs are enterprise identity providers whose ID-JAGs
	// (Identity Assertion JWT Authorization Grants, MCP Enterprise-Managed
	// Authorization) the token endpoint redeems with the JWT bearer grant
	// (RFC 7523 §2.1): header typ oauth-id-jag+jwt, signed by one of the
	// issuer's Keys, iss the issuer, aud this server's Issuer, sub allowed
	// by Subjects, client_id the authenticated client (which must list
	// the grant in its grant_types), resource one of Resources (and the
	// request's resource, if it sends one), exp not passed and at most
	// 10 minutes ahead, and a jti not seen before (remembered until exp;
	// at most 16384 at once, then temporarily_unavailable). The token is
	// for the ID-JAG's subject and resource, with the requested scopes
	// narrowed to the ID-JAG's scope. DEVELOPMENT ONLY: the keys are
	// configured, not fetched. Nil disables the grant for ID-JAGs.
	TrustedIdPs []TrustedIssuer
	// TrustedWorkloads are workload identity issuers (Kubernetes service
	// account issuers, SPIFFE trust domains) whose JWTs the token endpoint
	// redeems with the JWT bearer grant (MCP Workload Identity Federation):
	// signed by one of the issuer's Keys, iss the issuer, aud this
	// server's Issuer or token endpoint, sub matched by Subjects
	// (required), exp not passed and at most 24 hours ahead; a workload
	// JWT may be presented again until it expires (platform tokens are
	// reused until rotated). The request needs no client authentication
	// and must send resource (one of Resources); the token's client_id is
	// the workload's sub. DEVELOPMENT ONLY. Nil disables the grant for
	// workloads.
	TrustedWorkloads []TrustedIssuer

	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
	// Logger receives request failures (with their causes) and issued
	// tokens' jti. If nil, nothing is logged.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Subject == "" {
		c.Subject = defaultSubject
	}
	if c.Tenant == "" {
		c.Tenant = defaultTenant
	}
	if c.RefreshTokenTTL == 0 {
		c.RefreshTokenTTL = defaultRefreshTokenTTL
	}
	if c.MaxRegistrations == 0 {
		c.MaxRegistrations = defaultMaxRegistrations
	}
	if c.RegistrationTTL == 0 {
		c.RegistrationTTL = defaultRegistrationTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CIMD.Now == nil {
		c.CIMD.Now = c.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Resources = slices.Clone(c.Resources)
	c.Scopes = slices.Clone(c.Scopes)
	if c.RefreshTokens && !slices.Contains(c.Scopes, offlineAccess) {
		c.Scopes = append(c.Scopes, offlineAccess)
	}
	c.Clients = slices.Clone(c.Clients)
	c.TrustedIdPs = slices.Clone(c.TrustedIdPs)
	c.TrustedWorkloads = slices.Clone(c.TrustedWorkloads)
	return c
}

// check validates a Config that has its defaults.
func (c Config) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if why := checkIssuer(c.Issuer); why != "" {
		return bad("Issuer: %s", why)
	}
	if len(c.Resources) == 0 {
		return bad("Resources is required")
	}
	for _, r := range c.Resources {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			u.Fragment != "" || strings.Contains(r, "#") || len(r) > maxURLBytes {
			return bad("Resources: %q is not an absolute http(s) URI without fragment", r)
		}
	}
	for _, s := range c.Scopes {
		if !validScopeToken(s) {
			return bad("Scopes: %q is not a scope token", s)
		}
	}
	if !c.RefreshTokens && slices.Contains(c.Scopes, offlineAccess) {
		return bad("Scopes: offline_access needs RefreshTokens")
	}
	if !validName(c.Subject) || !validName(c.Tenant) {
		return bad("Subject and Tenant must be 1 to 64 characters of [A-Za-z0-9._~+-]")
	}
	if c.TokenTTL < 0 || c.RefreshTokenTTL < 0 || c.RegistrationTTL < 0 {
		return bad("negative TTL")
	}
	if c.MaxRegistrations < 0 {
		return bad("negative MaxRegistrations")
	}
	if c.Registry != nil && c.EnableDCR && c.DCRStore == nil {
		return bad("EnableDCR with a Registry needs DCRStore (the Registry's store)")
	}
	if c.Registry != nil && len(c.Clients) > 0 {
		return bad("Clients is ignored when Registry is set")
	}
	if err := checkTrusted("TrustedIdPs", c.TrustedIdPs, false); err != nil {
		return err
	}
	return checkTrusted("TrustedWorkloads", c.TrustedWorkloads, true)
}

// checkIssuer applies the rules in Config.Issuer and returns why iss is
// refused, or "".
func checkIssuer(iss string) string {
	u, err := url.Parse(iss)
	switch {
	case err != nil:
		return "unparsable"
	case u.Scheme != "https" && u.Scheme != "http":
		return "scheme must be https (or http on loopback)"
	case u.Host == "" || u.Opaque != "":
		return "no host"
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "http is allowed only on a loopback host"
	case u.User != nil:
		return "userinfo not allowed"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(iss, "?#"):
		return "query and fragment not allowed"
	case strings.HasSuffix(iss, "/"):
		return "trailing slash not allowed"
	case u.RawPath != "" || strings.Contains(iss, "%"):
		return "percent-encoding not allowed"
	case len(iss) > 512:
		return "too long"
	}
	return ""
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
