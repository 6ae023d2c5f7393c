package validate

import (
	"context"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jws"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"reflect"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Defaults applied by [New] to zero-valued [Config] fields.
const (
	// defaultLeeway is the clock skew tolerated on "exp", "nbf" and "iat"
	// when Config.Leeway is zero (shared with validate/introspect).
	defaultLeeway = jwtclaims.DefaultLeeway
	// defaultMaxTokenBytes is the largest raw token accepted when
	// Config.MaxTokenBytes is zero (shared with validate/introspect).
	defaultMaxTokenBytes = jwtclaims.DefaultMaxTokenBytes
	// defaultCacheSize is the number of verified tokens cached when
	// Config.CacheSize is zero.
	defaultCacheSize = 4096
	// defaultMaxKeyWait bounds the total time one Validate call waits on
	// its issuer's key source when Config.MaxKeyWait is zero: long enough
	// for validate/jwks to wait for a deferred refresh (its default rate
	// limit of 4 s plus its 2 s WaitTimeout).
	defaultMaxKeyWait = 6 * time.Second
)

// defaultAlgorithms is the asymmetric allow-list used when Config.Algorithms
// is nil (RFC 7518 §3.1, RFC 8037 §3.1 and RFC 9864 §2.2). It returns a
// new slice on every call.
func defaultAlgorithms() []jose.SignatureAlgorithm {
	return []jose.SignatureAlgorithm{
		jose.RS256, jose.RS384, jose.RS512,
		jose.PS256, jose.PS384, jose.PS512,
		jose.ES256, jose.ES384, jose.ES512,
		jose.EdDSA, Ed25519,
	}
}

// Issuer is one trusted authorization server: its exact "iss" value (RFC 8414
// §2 issuer identifier, RFC 9068 §4) and its own key source. A token whose
// "iss" equals Issuer is verified only with keys from Keys; the keys of one
// issuer never validate another issuer's token.
type Issuer struct {
	// Issuer is compared byte for byte with the token's "iss". Required.
	Issuer string
	// Keys supplies this issuer's verification keys. Required. Give each
	// issuer its own source: issuers that share one also share keys.
	Keys KeySource
}

// Config configures a [Validator]. [New] copies it, so later changes by the
// caller have no effect. No zero value disables a check: every relaxation is
// a named Allow… field that defaults to false.
type Config struct {
	// Issuers lists the trusted authorization servers. Required, at least
	// one, with unique Issuer strings. The token's "iss" is read from the
	// unverified payload only to choose the key source, then checked again
	// once the signature has verified.
	Issuers []Issuer

	// Audiences lists the identifiers of this resource server (RFC 8707 §2
	// resource, RFC 9728 §2 "resource"). Required. A token is accepted when
	// any of its "aud" values (a string or an array, RFC 7519 §4.1.3)
	// equals any of these exactly or, failing that, with the scheme and
	// host compared case-insensitively (MCP Canonical
	// Server URI); the path is always case-sensitive.
	Audiences []string

	// RejectMultipleAudiences refuses tokens whose "aud" holds more than one
	// value, even if one of them matches. Defaults to false.
	RejectMultipleAudiences bool

	// AllowedClients, if non-nil, lists the OAuth client identifiers whose
	// tokens are accepted, matched against "client_id" (RFC 9068 §2.2) or,
	// when that is absent, "azp". If nil, any client is accepted. A non-nil
	// empty slice is a configuration error.
	AllowedClients []string

	// Algorithms is the JWS "alg" allow-list (RFC 7515 §4.1.1, RFC 8725
	// §3.1). If nil, the default set is used: RS256/384/512,
	// PS256/384/512, ES256/384/512, EdDSA and its fully specified name
	// [Ed25519] (RFC 9864), both for Ed25519 keys only. HMAC algorithms and
	// "none" are refused by New, as is any algorithm this package cannot
	// verify. A non-nil empty slice is a configuration error.
	Algorithms []jose.SignatureAlgorithm

	// AllowJWTType additionally accepts a JOSE "typ" of "JWT" or
	// "application/jwt", or no "typ" at all. By default only "at+jwt" and
	// "application/at+jwt" (case-insensitive, RFC 9068 §2.1) are accepted.
	// Setting it WEAKENS validation: ID tokens and other JWTs from the same
	// issuer can then be replayed as access tokens if their other claims
	// pass. Use it only for legacy issuers that cannot type their tokens.
	AllowJWTType bool

	// AllowMissingJTI accepts tokens without "jti". RFC 9068 §2.2 requires
	// it; defaults to false.
	AllowMissingJTI bool
	// AllowMissingClientID accepts tokens without "client_id" (RFC 9068
	// §2.2). Claims.ClientID then falls back to "azp". Defaults to false.
	AllowMissingClientID bool
	// AllowMissingIssuedAt accepts tokens without "iat" (RFC 9068 §2.2).
	// Ignored when MaxTokenLifetime is set, which needs "iat". Defaults to
	// false.
	AllowMissingIssuedAt bool
	// AllowMissingSubject accepts tokens without "sub" (RFC 9068 §2.2), as
	// some issuers send for client-credentials grants. Defaults to false.
	// "iss", "aud" and "exp" can never be relaxed.
	AllowMissingSubject bool

	// AllowConfirmation accepts sender-constrained tokens whose "cnf"
	// (RFC 7800 §3.1) is a DPoP key confirmation {"jkt": …} (RFC 9449
	// §6.1), and fills Claims.Confirmation. Set it ONLY when the caller
	// verifies the proof of possession itself, as the middleware does with
	// DPoP: otherwise a stolen DPoP-bound token works as a bearer token.
	// A "cnf" with any other member (such as mTLS's "x5t#S256", RFC 8705
	// §3.1) is refused even with it. Defaults to false: every token with
	// "cnf" fails with [Error] "sender_constrained".
	AllowConfirmation bool

	// Leeway is the clock skew tolerated on "exp", "nbf" and "iat". If zero,
	// 30s is used. A negative value means no leeway.
	Leeway time.Duration

	// MaxTokenLifetime, if positive, rejects tokens whose exp - iat exceeds
	// it, and then requires "iat". If zero, the lifetime is not checked.
	// Negative is a configuration error.
	MaxTokenLifetime time.Duration

	// AllowSCP also reads scopes from "scp" (a space-delimited string or an
	// array of strings, as Azure AD and Okta emit) when "scope" (RFC 8693
	// §4.2, RFC 9068 §2.2.3) is absent. Defaults to false: "scp" is ignored.
	AllowSCP bool

	// TenantClaim names a claim copied into Claims.Tenant, for example "tid"
	// or "org_id". It must be a JSON string when present. If empty, no
	// tenant is read.
	TenantClaim string

	// Now returns the current time. If nil, time.Now is used.
	Now func() time.Time

	// MaxTokenBytes bounds the length of the raw token, checked before any
	// decoding. If zero, 8192 is used. Negative is
	// a configuration error.
	MaxTokenBytes int

	// RequireKID refuses tokens without a "kid" header (or with an empty
	// one) with [Error] "unknown_key". By default such a token is verified, as
	// RFC 7515 §4.1.4 makes "kid" optional: the issuer's KeySource is asked
	// for Keys(ctx, ""), which returns every key it serves, published with
	// or without a kid, and the keys whose "alg", type, curve and "use" fit
	// the token's "alg" are tried. When more than 8 keys fit, the token is
	// refused with [Error] "unknown_key" without any being tried (an issuer that
	// publishes that many keys must name them with kid), so one token costs
	// at most 8 signature verifications per key-set lookup.
	RequireKID bool

	// AllowMissingKID is ignored.
	//
	// Deprecated: tokens without "kid" are verified by default; set
	// RequireKID to refuse them.
	AllowMissingKID bool

	// CacheSize is the number of verified tokens remembered, keyed by a
	// seeded hash of the raw token. If zero, 4096 is used;
	// if negative, caching is disabled. Each entry holds a copy of the raw
	// token and its claims, so memory is bounded by about CacheSize ×
	// 2 × MaxTokenBytes. See [Validator] for what a cache hit re-checks and
	// for the revocation trade-off.
	CacheSize int

	// MaxKeyWait bounds the total time one Validate call spends waiting on
	// the issuer's key source (a lookup that waits for a running or
	// deferred refresh, then at most one refresh after a failed signature).
	// When the first lookup used the budget up, the refresh is skipped. If
	// zero, 6s is used. Negative is a configuration error.
	// A KeySource bounds each single call itself (validate/jwks:
	// WaitTimeout).
	MaxKeyWait time.Duration

	// Observer, if set, is called after every Validate call with its
	// duration, its outcome and whether the verified-token cache answered,
	// for metrics (package otelguard adapts it to OpenTelemetry). It runs
	// on the caller's goroutine and must not block. Nil costs nothing.
	Observer func(ctx context.Context, e Observation)
}

// withDefaults returns a copy of c with zero values replaced by defaults and
// every slice cloned, so that the caller cannot change a Validator later.
func (c Config) withDefaults() Config {
	c.Issuers = slices.Clone(c.Issuers)
	c.Audiences = slices.Clone(c.Audiences)
	c.AllowedClients = slices.Clone(c.AllowedClients)
	if c.Algorithms == nil {
		c.Algorithms = defaultAlgorithms()
	} else {
		c.Algorithms = slices.Clone(c.Algorithms)
	}
	switch {
	case c.Leeway == 0:
		c.Leeway = defaultLeeway
	case c.Leeway < 0:
		c.Leeway = 0
	}
	if c.MaxTokenBytes == 0 {
		c.MaxTokenBytes = defaultMaxTokenBytes
	}
	if c.CacheSize == 0 {
		c.CacheSize = defaultCacheSize
	}
	if c.MaxKeyWait == 0 {
		c.MaxKeyWait = defaultMaxKeyWait
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// check reports the first problem with a defaulted config, wrapping ErrConfig.
func (c Config) check() error {
	if len(c.Issuers) == 0 {
		return fmt.Errorf("%w: no issuers", ErrConfig)
	}
	seen := make(map[string]bool, len(c.Issuers))
	for i, is := range c.Issuers {
		if is.Issuer == "" {
			return fmt.Errorf("%w: issuer %d has an empty Issuer", ErrConfig, i)
		}
		if isNil(is.Keys) {
			return fmt.Errorf("%w: issuer %q has no key source", ErrConfig, is.Issuer)
		}
		if seen[is.Issuer] {
			return fmt.Errorf("%w: duplicate issuer %q", ErrConfig, is.Issuer)
		}
		seen[is.Issuer] = true
	}
	if len(c.Audiences) == 0 {
		return fmt.Errorf("%w: no audiences", ErrConfig)
	}
	if slices.Contains(c.Audiences, "") {
		return fmt.Errorf("%w: empty audience", ErrConfig)
	}
	if c.AllowedClients != nil && len(c.AllowedClients) == 0 {
		return fmt.Errorf("%w: AllowedClients is empty; use nil to allow any client", ErrConfig)
	}
	if slices.Contains(c.AllowedClients, "") {
		return fmt.Errorf("%w: empty client in AllowedClients", ErrConfig)
	}
	if len(c.Algorithms) == 0 {
		return fmt.Errorf("%w: Algorithms is empty; use nil for the default set", ErrConfig)
	}
	for _, a := range c.Algorithms {
		if _, ok := jws.LookupAlg(string(a)); !ok {
			return fmt.Errorf("%w: algorithm %q is not an allowed asymmetric JWS algorithm", ErrConfig, string(a))
		}
	}
	if c.MaxTokenBytes < 0 {
		return fmt.Errorf("%w: negative MaxTokenBytes", ErrConfig)
	}
	if c.MaxKeyWait < 0 {
		return fmt.Errorf("%w: negative MaxKeyWait", ErrConfig)
	}
	if c.MaxTokenLifetime < 0 {
		return fmt.Errorf("%w: negative MaxTokenLifetime", ErrConfig)
	}
	return nil
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, func or channel (a typed nil such as (*jwks.Source)(nil)),
// which would pass a plain == nil check and panic on first use.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
