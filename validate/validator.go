package validate

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jws"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Validator verifies JWT access tokens (RFC 9068) for one resource server.
// It is safe for concurrent use.
//
// # Verified-token cache
//
// Unless Config.CacheSize is negative, a Validator remembers up to
// CacheSize verified tokens, keyed by a seeded hash of the raw token, so a
// client that sends the same token on every request pays for one signature
// verification, not one per request. Failures are never cached. A hit
// re-checks "exp", "nbf", "iat" and Config.MaxTokenLifetime against
// Config.Now, and asks the issuer's [KeySource] whether the key that
// verified the token is still published under its kid; if not, the entry is
// dropped and the token validated again in full, which then fails. An
// entry is never served once its token has expired: the first lookup after
// "exp" (plus leeway) evicts it, and otherwise the least recently used
// entries of the principal (issuer, subject, client) holding the most make
// room for new ones: one principal presenting endless fresh tokens evicts
// only its own.
//
// Revocation trade-off: a JWT access token is self-contained, so this
// package cannot learn that an unexpired token was revoked, cached or not;
// the cache adds no delay beyond that, because removing the signing key
// from the issuer's key set takes effect on the very next request. Issuers
// that need faster revocation should issue short-lived tokens or use
// introspection (RFC 7662).
type Validator struct {
	cfg     Config
	algs    []jws.Alg
	issuers map[string]*issuerState
	cache   *tokenCache     // nil when disabled
	json    strictjson.Pool // buffers for reading headers and claims sets
	// headerNames and claimNames are the names read from the JOSE header
	// and the claims set, whose case variants are refused.
	headerNames, claimNames []string
	// canonAud holds Config.Audiences with scheme and host lower-cased, for
	// the case-insensitive fallback in audienceOK.
	canonAud []string
}

// issuerState is one configured issuer.
type issuerState struct {
	name      string
	keys      KeySource
	refresher keyRefresher // nil if keys does not implement Refresher
}

// New returns a Validator for cfg. It returns an error wrapping [ErrConfig]
// if an issuer, an audience or a key source is missing, an issuer is
// repeated, an algorithm is not an allowed asymmetric one, or a limit is
// negative.
func New(cfg Config) (*Validator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	v := &Validator{cfg: cfg, issuers: make(map[string]*issuerState, len(cfg.Issuers)),
		headerNames: headerNames(), claimNames: claimNames(cfg.TenantClaim)}
	for _, a := range cfg.Audiences {
		if c, ok := jwtclaims.CanonicalURI(a); ok {
			v.canonAud = append(v.canonAud, c)
		}
	}
	for _, a := range cfg.Algorithms {
		spec, _ := jws.LookupAlg(string(a))
		v.algs = append(v.algs, spec)
	}
	for _, is := range cfg.Issuers {
		st := &issuerState{name: is.Issuer, keys: is.Keys}
		st.refresher, _ = is.Keys.(keyRefresher)
		v.issuers[is.Issuer] = st
	}
	if cfg.CacheSize > 0 {
		v.cache = newTokenCache(cfg.CacheSize)
	}
	return v, nil
}

// Validate verifies raw, a JWT access token in JWS compact serialization
// (RFC 7515 §7.1, RFC 9068 §4), and returns its claims. Every error wraps
// exactly one sentinel of this package and never contains a value read
// from the token. Checks run cheapest first:
//
//  1. size (Error "too_large"), then the cache, if enabled;
//  2. three strict base64url segments; the header one JSON object by the
//     internal/strictjson policy (valid UTF-8, no repeated names at any
//     depth, no names equal under case folding, no case variant of a
//     parameter read), at most 32 parameters, "alg", "typ" and "kid"
//     strings (Error "malformed");
//  3. "alg" in the allow-list (Error "algorithm"); no "crit", "b64",
//     "jku", "x5u", "jwk", "x5c" or "cty" header; "typ" is at+jwt
//     (Error "type"); a "kid" header (Error "unknown_key");
//  4. the claims set one JSON object by the same policy (Error "malformed");
//  5. unverified "iss" routes to a configured issuer (Error "missing_claim",
//     Error "malformed", Error "issuer");
//  6. usable keys under kid (Error "unknown_key", ErrKeysUnavailable) and the
//     signature (Error "signature"), retried once after a Refresh of the key source;
//  7. claim types and required claims (Error "malformed", Error "missing_claim"),
//     and "cnf" (Error "sender_constrained" unless Config.AllowConfirmation);
//  8. audience (Error "audience"), client (Error "client"), then exp, nbf, iat and
//     lifetime (Error "expired", Error "not_yet_valid", Error "issued_at", Error "lifetime").
func (v *Validator) Validate(ctx context.Context, raw string) (*Claims, error) {
	if v.cfg.Observer != nil {
		return v.observed(ctx, raw) // observe.go
	}
	return v.validate(ctx, raw, nil)
}

// validate is Validate; it sets *hit, when hit is not nil, to whether the
// verified-token cache answered.
func (v *Validator) validate(ctx context.Context, raw string, hit *bool) (*Claims, error) {
	if len(raw) > v.cfg.MaxTokenBytes {
		return nil, errTooLarge
	}
	if raw == "" {
		return nil, errSegments
	}
	now := v.cfg.Now()
	var key cacheKey
	if v.cache != nil {
		key = v.cache.keyOf(raw)
		if c, done, err := v.fromCache(ctx, key, raw, now); done {
			if hit != nil {
				*hit = true
			}
			return c, err
		}
	}
	start := time.Now() // monotonic; the MaxKeyWait budget, not a claim check
	var tok token
	if err := v.parse(raw, &tok); err != nil {
		return nil, err
	}
	rc, err := v.collect(&tok)
	if err != nil {
		return nil, err
	}
	iss, err := issuerOf(&rc)
	if err != nil {
		return nil, err
	}
	is := v.issuers[iss]
	if is == nil {
		return nil, errUnknownIssuer
	}
	pub, err := v.verify(ctx, is, &tok, start)
	if err != nil {
		return nil, err
	}
	// The claims set is now authentic; iss was read from these same bytes,
	// so this re-check can only fail if routing above is ever changed.
	if iss != is.name {
		return nil, errIssuerMismatch
	}
	c := &Claims{Issuer: iss, KeyID: tok.kid, payload: tok.payload}
	if err := v.decodeClaims(&rc, c); err != nil {
		return nil, err
	}
	if err := v.checkClaims(c, now); err != nil {
		return nil, err
	}
	if v.cache != nil {
		v.cache.add(&cacheEntry{key: key, raw: strings.Clone(raw), claims: c.clone(), issuer: is, alg: tok.alg, kid: tok.kid, pub: pub})
	}
	return c, nil
}

var (
	errKeySource   = fmt.Errorf("%w: key source error", ErrKeysUnavailable)
	errTooManyKeys = fmt.Errorf("%w: more candidate keys than a token may try", errKeyNotFound)
)

// verify checks tok's signature with is's usable keys under tok's kid and
// returns the key that verified it. If a signature fails under a known kid
// and the key source has a Refresh method, it refreshes once and retries.
func (v *Validator) verify(ctx context.Context, is *issuerState, tok *token, start time.Time) (crypto.PublicKey, error) {
	pub, err := tryKeys(ctx, is, tok)
	// A signature whose length no key of the algorithm could produce can
	// never verify, so it must not cost the authorization server a fetch.
	if !errors.Is(err, errSignature) || is.refresher == nil || !jws.PlausibleSignature(tok.alg, tok.sig) {
		return pub, err
	}
	// One Validate call waits on its key source for at most MaxKeyWait in
	// all: the refresh gets what the first lookup left of the budget.
	left := v.cfg.MaxKeyWait - time.Since(start)
	if left <= 0 {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	if is.refresher.Refresh(rctx) != nil {
		return nil, err
	}
	return tryKeys(rctx, is, tok)
}

// keySourceErr maps a KeySource error: Error "unknown_key" loses the source's
// text (which may quote the unverified kid), ErrKeysUnavailable passes, and
// anything else becomes ErrKeysUnavailable with its cause kept.
func keySourceErr(err error) error {
	switch {
	case errors.Is(err, errKeyNotFound):
		return errKeyNotFound
	case errors.Is(err, ErrKeysUnavailable):
		return err
	default:
		return fmt.Errorf("%w: %w", errKeySource, err)
	}
}

func tryKeys(ctx context.Context, is *issuerState, tok *token) (crypto.PublicKey, error) {
	keys, err := is.keys.Keys(ctx, tok.kid)
	if err != nil {
		return nil, keySourceErr(err)
	}
	if len(keys) > maxCandidateKeys {
		// More keys than one token may cost verifications: count the ones
		// that fit before trying any (ambiguous without a kid).
		fit := 0
		for i := range keys {
			if _, ok := jws.UsableKey(&keys[i], tok.alg, tok.kid); ok {
				fit++
			}
		}
		if fit > maxCandidateKeys {
			return nil, errTooManyKeys
		}
	}
	tried := 0
	for i := range keys {
		pub, ok := jws.UsableKey(&keys[i], tok.alg, tok.kid)
		if !ok {
			continue
		}
		if jws.Verify(tok.alg, pub, tok.input, tok.sig, tok.scratch) {
			return pub, nil
		}
		tried++
	}
	if tried == 0 {
		return nil, errKeyNotFound
	}
	return nil, errSignature
}
