package introspect

import (
	"crypto"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/keyalg"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
)

// Defaults for the zero values of [Config].
const (
	// defaultTimeout bounds one introspection call (discovery included).
	defaultTimeout = 5 * time.Second
	// defaultMaxBytes caps the introspection response body.
	defaultMaxBytes = 64 << 10
	// defaultCacheSize is the number of introspection results cached.
	defaultCacheSize = 4096
	// defaultMaxCacheTTL is the longest an active result is reused: 60 s,
	// the longest a token revoked at the authorization server is still
	// accepted here by default.
	defaultMaxCacheTTL = time.Minute
	// assertionLifetime is the validity of a private_key_jwt client
	// assertion (RFC 7523 §3 "exp").
	assertionLifetime = 60 * time.Second
)

// The client authentications of Config.AuthMethod (RFC 7591 §2
// token_endpoint_auth_method names, and "bearer").
const (
	authBasic  = "client_secret_basic"
	authPost   = "client_secret_post"
	authJWT    = "private_key_jwt"
	authBearer = "bearer"
)

// Config configures an [Introspector]. [New] copies it, so later changes
// by the caller have no effect. No zero value disables a check; the
// relaxations are the named Allow… fields.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414 §2).
	// Required. A response's "iss" must equal it byte for byte; a response
	// without "iss" is taken to be about a token of this issuer, because
	// the answer comes over an authenticated channel from this issuer's
	// own endpoint. When Endpoint is empty, Issuer is also where the
	// endpoint is discovered, so it must then be an https URL (http only
	// on a loopback host).
	Issuer string
	// Endpoint is the introspection endpoint URL (RFC 7662 §2). Empty
	// means discover the "introspection_endpoint" member of Issuer's
	// metadata (RFC 8414 §2, with the issuer mix-up check of
	// [asmeta.Discover]) on first use; the result is kept for the life of
	// the Introspector, and a failed discovery is retried at most every
	// 5 s. It must be https, or http on a loopback host.
	Endpoint string
	// Audiences lists the identifiers of this resource server (RFC 8707
	// §2). Required. A response's "aud" (a string or an array of strings)
	// must contain one of them, compared as package validate compares a
	// JWT's: exactly, or with the scheme and host case-insensitive (MCP
	// Canonical Server URI); the path is always case-sensitive.
	Audiences []string
	// AllowMissingAudience accepts active responses that have no "aud"
	// member (or an empty one), as many authorization servers send. This
	// WEAKENS validation: a token the authorization server issued for a
	// different resource server is then accepted here too, which is the
	// token-redirect attack that audience restriction (RFC 8707, MCP
	// authorization §Token Audience Binding) exists to stop. A present
	// "aud" must still match. Defaults to false.
	AllowMissingAudience bool
	// AllowMissingSubject accepts active responses without "sub" (or with
	// an empty one), as some authorization servers send for
	// client-credentials grants; the JWT path has the same relaxation
	// (validate.Config.AllowMissingSubject). Defaults to false: a
	// response without "sub" fails with validate.Error{Reason: "missing_claim"}.
	AllowMissingSubject bool
	// AllowConfirmation accepts responses for sender-constrained tokens
	// whose "cnf" (RFC 7800 §3.1, RFC 7662 §2.2) is a DPoP key
	// confirmation {"jkt": …} (RFC 9449 §6.1), and a "token_type" of
	// "DPoP" with it; the returned Claims' Confirmation is then set. Set
	// it ONLY when the caller verifies the proof of possession itself, as
	// the middleware does with DPoP. A "cnf" with any other member (mTLS's
	// "x5t#S256", RFC 8705 §3.1) is refused even with it. Defaults to
	// false: any "cnf" fails with validate.Error{Reason: "sender_constrained"}.
	AllowConfirmation bool

	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint. ClientID is required except with "bearer";
	// ClientSecret is required with "client_secret_basic" and
	// "client_secret_post".
	ClientID, ClientSecret string
	// AuthMethod selects how the resource server authenticates itself to
	// the introspection endpoint (RFC 7662 §2.1 leaves the choice to the
	// authorization server), by its RFC 7591 §2 name:
	//   - "client_secret_basic" (also the zero value ""): ClientID and
	//     ClientSecret with HTTP Basic authentication, each
	//     form-urlencoded first (RFC 6749 §2.3.1).
	//   - "client_secret_post": client_id and client_secret as form
	//     parameters of the request body (RFC 6749 §2.3.1).
	//   - "private_key_jwt": client_id and a client assertion signed with
	//     PrivateKey (RFC 7523 §2.2, OpenID Connect Core §9): iss and sub
	//     are ClientID, aud the introspection endpoint URL, a random jti,
	//     iat now and exp 60 s later.
	//   - "bearer": "Authorization: Bearer" with an access token from
	//     TokenSource (RFC 6750 §2.1), for authorization servers that
	//     protect their introspection endpoint that way, for instance with
	//     a token obtained through the client credentials grant
	//     ([ClientCredentials]).
	// Any other value is a configuration error.
	AuthMethod string
	// PrivateKey signs the client assertions of "private_key_jwt"; required
	// with it. Any crypto.Signer works (an HSM or KMS key too) whose public
	// key is ECDSA (P-256/384/521), RSA (2048 bits or more) or Ed25519.
	PrivateKey crypto.Signer
	// KeyID is the "kid" header of the client assertions, as registered
	// with the authorization server. Empty sends none.
	KeyID string
	// Algorithm is the JWS algorithm of the client assertions. If empty it
	// follows from PrivateKey: ES256, ES384 or ES512 for the ECDSA curves,
	// RS256 for RSA, EdDSA for Ed25519. It must fit the key.
	Algorithm jose.SignatureAlgorithm
	// TokenSource supplies the access token of "bearer"; required
	// with it. It is called on every introspection request with that
	// request's context, so it must cache its token: use
	// [ClientCredentials] for the client credentials grant, or
	// [StaticToken].
	TokenSource TokenSource

	// HTTPClient sends the requests. If nil, a client from internal/fetch
	// is used: Timeout per request, no environment proxies, TLS 1.2+. It
	// has no SSRF address guard, because the endpoint is operator
	// configuration. Redirects are never followed, whatever the client's
	// policy: a redirected POST would resend the token and the
	// credentials.
	HTTPClient *http.Client
	// Timeout bounds one introspection call, endpoint discovery included.
	// Zero means 5 s. Negative is a configuration
	// error.
	Timeout time.Duration
	// MaxBytes caps the response body after decompression. Zero means
	// 64 KiB. Negative is a configuration error.
	MaxBytes int64
	// Observer, if set, is told when each call to the introspection
	// endpoint starts and ends (cache hits make no call), for metrics and
	// traces (package otelguard adapts it to OpenTelemetry). Nil costs
	// nothing. See [CallObserver].
	Observer CallObserver
	// MaxTokenBytes bounds the raw token; a longer one is refused with
	// [validate.Error] "too_large" and never sent. Zero means
	// 8192. Negative is a configuration
	// error.
	MaxTokenBytes int

	// Leeway is the clock skew tolerated on "exp", "nbf" and "iat". Zero
	// means 30 s; negative means none.
	Leeway time.Duration

	// CacheSize is the number of results remembered, keyed by the SHA-256
	// of the token (the token itself is never stored). Zero means
	// 4096; negative disables caching. See
	// [Introspector] for what is cached and for how long.
	CacheSize int
	// MaxCacheTTL is the longest an active result is reused without asking
	// the endpoint again; it is the longest a revoked token can still be
	// accepted here. An entry also expires at the token's "exp". Zero
	// means 60 s. Negative is a configuration
	// error.
	MaxCacheTTL time.Duration
	// InactiveCacheTTL is how long an inactive result is remembered. Zero
	// means inactive results are not cached: each presentation of an
	// inactive token asks the endpoint again. Negative is a configuration
	// error. See [Introspector] for why zero is the default.
	InactiveCacheTTL time.Duration

	// TenantClaim names a response member copied into Claims.Tenant, for
	// example "tid" or "org_id". It must be a JSON string when present.
	// If empty, no tenant is read.
	TenantClaim string

	// Now returns the current time. If nil, time.Now is used.
	Now func() time.Time
	// Logger receives the endpoint's refusals of our client credentials
	// (Error), malformed responses (Warn) and discovery (Info). If nil,
	// nothing is logged. Tokens are never logged.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	c.Audiences = slices.Clone(c.Audiences)
	if c.AuthMethod == "" {
		c.AuthMethod = authBasic
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = defaultMaxBytes
	}
	if c.MaxTokenBytes == 0 {
		c.MaxTokenBytes = jwtclaims.DefaultMaxTokenBytes
	}
	switch {
	case c.Leeway == 0:
		c.Leeway = jwtclaims.DefaultLeeway
	case c.Leeway < 0:
		c.Leeway = 0
	}
	if c.CacheSize == 0 {
		c.CacheSize = defaultCacheSize
	}
	if c.MaxCacheTTL == 0 {
		c.MaxCacheTTL = defaultMaxCacheTTL
	}
	if c.AuthMethod == authJWT && c.Algorithm == "" && c.PrivateKey != nil {
		c.Algorithm = keyalg.Default(c.PrivateKey.Public())
	}
	if c.HTTPClient == nil && c.Timeout > 0 {
		c.HTTPClient = fetch.NewClient(fetch.ClientConfig{Timeout: c.Timeout})
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// check reports the first problem with a defaulted config, wrapping
// ErrConfig.
func (c Config) check() error {
	switch {
	case c.Issuer == "":
		return fmt.Errorf("%w: Issuer is required", ErrConfig)
	case len(c.Audiences) == 0:
		return fmt.Errorf("%w: no audiences", ErrConfig)
	case slices.Contains(c.Audiences, ""):
		return fmt.Errorf("%w: empty audience", ErrConfig)
	case c.Timeout < 0, c.MaxCacheTTL < 0, c.InactiveCacheTTL < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.MaxBytes < 0, c.MaxTokenBytes < 0:
		return fmt.Errorf("%w: negative size limit", ErrConfig)
	}
	if c.Endpoint != "" {
		if _, err := fetch.CheckURL(c.Endpoint, true); err != nil {
			return fmt.Errorf("%w: Endpoint: %w", ErrConfig, err)
		}
	} else if _, err := asmeta.WellKnownURLs(c.Issuer); err != nil {
		return fmt.Errorf("%w: Issuer (needed to discover the endpoint): %w", ErrConfig, err)
	}
	return c.checkAuth()
}

func (c Config) checkAuth() error {
	switch c.AuthMethod {
	case authBasic, authPost:
		if c.ClientID == "" || c.ClientSecret == "" {
			return fmt.Errorf("%w: %s needs ClientID and ClientSecret", ErrConfig, c.AuthMethod)
		}
	case authJWT:
		if c.ClientID == "" || c.PrivateKey == nil {
			return fmt.Errorf("%w: private_key_jwt needs ClientID and PrivateKey", ErrConfig)
		}
		if err := checkKey(c.PrivateKey.Public(), c.Algorithm); err != nil {
			return fmt.Errorf("%w: PrivateKey: %w", ErrConfig, err)
		}
	case authBearer:
		if c.TokenSource == nil {
			return fmt.Errorf("%w: bearer needs a TokenSource", ErrConfig)
		}
	default:
		return fmt.Errorf("%w: unknown AuthMethod %q", ErrConfig, c.AuthMethod)
	}
	return nil
}
