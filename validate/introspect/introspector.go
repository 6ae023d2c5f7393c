package introspect

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/validate"
)

// discoveryBackoff is the shortest time between two attempts to discover
// the endpoint after one failed.
const discoveryBackoff = 5 * time.Second

var (
	// errUnavailable: the token was not judged; 503 at the HTTP layer.
	errUnavailable = fmt.Errorf("%w: %w", ErrEndpoint, validate.ErrKeysUnavailable)
	// errRejected: the endpoint refused our client authentication.
	errRejected = fmt.Errorf("%w: %w", ErrClientAuth, validate.ErrKeysUnavailable)
	// errRefused: the endpoint answered 400 about the token; 401.
	errRefused     = fmt.Errorf("%w: %w", ErrRefused, validate.Error{Reason: "inactive"})
	errTooLarge    = fmt.Errorf("%w: token longer than MaxTokenBytes", validate.Error{Reason: "too_large"})
	errTokenSyntax = fmt.Errorf("%w: token is empty or has a character outside visible ASCII", validate.Error{Reason: "malformed"})
)

// Introspector validates access tokens by asking the authorization
// server's introspection endpoint (RFC 7662) whether they are active, and
// then checking the answer as strictly as [validate.Validator] checks a
// JWT: issuer, audience and expiry are required. It is safe for
// concurrent use and starts no goroutine.
//
// # Result cache
//
// Unless Config.CacheSize is negative, an Introspector remembers up to
// CacheSize results keyed by the SHA-256 of the token (the token itself is
// never stored), shared fairly: when full, the least recently used result
// of the principal holding the most leaves, and every inactive result
// counts as one principal, so neither fresh tokens of one principal nor
// junk tokens evict another principal's result. An active result is
// reused until the token's "exp" or for Config.MaxCacheTTL, whichever
// comes first, and every hit re-checks exp, nbf and iat. Errors (an
// unreachable endpoint, a malformed response, a wrong audience, …) are
// never cached. Concurrent validations of the same token share one
// request to the endpoint (single-flight); a caller whose context ends
// stops waiting, but the request goes on, bounded by Config.Timeout, and
// its result is cached for the others.
//
// Inactive results are not cached by default (Config.InactiveCacheTTL
// zero). A negative cache buys little: an attacker who floods the server
// with junk tokens varies them, so every one is a miss anyway; that needs
// rate limiting, not caching. And it can cost correctness: an
// authorization server whose introspection lags its token endpoint (a
// replicated token store) may briefly call a freshly issued token
// inactive, and a cached "inactive" would lock its client out for the TTL.
// Set InactiveCacheTTL when clients are known to retry revoked tokens in a
// loop.
//
// Revocation trade-off: introspection exists so that revocation takes
// effect, and every cached result delays it. A token revoked at the
// authorization server is still accepted here until its entry expires:
// at most MaxCacheTTL (60 s by default) after this server last asked, and
// never past the token's exp.
// Lower MaxCacheTTL for faster revocation at the price of more requests
// to the endpoint; a negative CacheSize asks on every request.
type Introspector struct {
	cfg        Config
	client     *http.Client
	basicAuth  string      // precomputed Authorization value for ClientSecretBasic
	signer     jose.Signer // for PrivateKeyJWT
	cache      *resultCache
	canonAud   []string // Config.Audiences with scheme and host lower-cased
	flights    singleflight.Group
	waiting    atomic.Int64 // callers waiting on a flight; read only by tests
	discovered atomic.Pointer[string]

	discMu     sync.Mutex // serializes discovery
	discFailed time.Time  // when discovery last failed
	discErr    error      // and why

	json  strictjson.Pool // buffers for reading responses
	names []string        // the response members read (responseNames)
}

// New returns an Introspector for cfg. It does no I/O: the endpoint, when
// not configured, is discovered on first use. It returns an error wrapping
// [ErrConfig] if Issuer or Audiences is missing, a limit is negative, the
// endpoint or issuer URL is not https (or http on loopback), or the
// credentials of Config.AuthMethod are missing or do not fit.
func New(cfg Config) (*Introspector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	i := &Introspector{cfg: cfg, client: cfg.HTTPClient, names: responseNames(cfg.TenantClaim)}
	switch cfg.AuthMethod {
	case authBasic:
		i.basicAuth = "Basic " + base64.StdEncoding.EncodeToString(
			[]byte(url.QueryEscape(cfg.ClientID)+":"+url.QueryEscape(cfg.ClientSecret)))
	case authJWT:
		s, err := newAssertionSigner(cfg)
		if err != nil {
			return nil, fmt.Errorf("%w: PrivateKey: %w", ErrConfig, err)
		}
		i.signer = s
	}
	if cfg.CacheSize > 0 {
		i.cache = newResultCache(cfg.CacheSize)
	}
	for _, a := range cfg.Audiences {
		if c, ok := jwtclaims.CanonicalURI(a); ok {
			i.canonAud = append(i.canonAud, c)
		}
	}
	return i, nil
}

// Validate asks the introspection endpoint about raw, an access token of
// any format, and returns its claims if the endpoint reports it active and
// the response passes every check. It satisfies middleware.TokenValidator.
// Every error wraps one sentinel of package validate:
//
//   - ErrTooLarge, ErrMalformed: raw is too long, empty or not visible
//     ASCII; nothing is sent.
//   - ErrKeysUnavailable (also [ErrEndpoint] or [ErrClientAuth], or the
//     caller's context error): no answer about the token; 503.
//   - ErrMalformed: the response is not a JSON object by the strictjson
//     policy (valid UTF-8, unique member names, no case variants of the
//     members read), "active" is missing or not a JSON boolean, a member
//     has the wrong type, or "cnf" is not {"jkt": base64url}.
//   - ErrInactive: "active" is false.
//   - ErrType: "token_type" is present and neither "Bearer" nor
//     "access_token" (nor "DPoP" with AllowConfirmation and a cnf.jkt).
//   - ErrSenderConstrained: "cnf" binds the token to a key (DPoP, mTLS)
//     and AllowConfirmation is off, or "cnf" has a method other than jkt.
//   - ErrMissingClaim: no "exp", no "sub" without AllowMissingSubject, or
//     no "aud" without AllowMissingAudience.
//   - ErrIssuer, ErrAudience, ErrExpired, ErrNotYetValid, ErrIssuedAt.
func (i *Introspector) Validate(ctx context.Context, raw string) (*validate.Claims, error) {
	if len(raw) > i.cfg.MaxTokenBytes {
		return nil, errTooLarge
	}
	if !visibleASCII(raw) {
		return nil, errTokenSyntax
	}
	// Hashing through a stack buffer keeps a cache hit free of allocations
	// other than the caller's copy of the claims.
	var buf [512]byte
	var key cacheKey
	if len(raw) <= len(buf) {
		key = sha256.Sum256(append(buf[:0], raw...))
	} else {
		key = sha256.Sum256([]byte(raw))
	}
	if i.cache != nil {
		if c, done, err := i.fromCache(key, i.cfg.Now()); done {
			return c, err
		}
	}
	return i.shared(ctx, raw, key)
}

// shared runs or joins the single flight for key. The request is detached
// from the caller's cancellation so that one impatient caller cannot fail
// the others waiting on the same flight; Config.Timeout bounds it.
func (i *Introspector) shared(ctx context.Context, raw string, key cacheKey) (*validate.Claims, error) {
	ch := i.flights.DoChan(string(key[:]), func() (any, error) {
		return i.observed(context.WithoutCancel(ctx), raw, key) // observe.go
	})
	i.waiting.Add(1)
	defer i.waiting.Add(-1)
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return cloneClaims(r.Val.(*validate.Claims)), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errUnavailable, context.Cause(ctx))
	}
}

// visibleASCII reports whether s is non-empty and every byte is %x21-7E,
// a superset of RFC 6750 §2.1 b64token.
func visibleASCII(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// introspect makes one request about raw and caches the outcome.
func (i *Introspector) introspect(ctx context.Context, raw string, key cacheKey) (*validate.Claims, error) {
	ctx, cancel := context.WithTimeout(ctx, i.cfg.Timeout)
	defer cancel()
	endpoint, err := i.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	header := http.Header{}
	if err := i.authenticate(ctx, endpoint, form, header); err != nil {
		i.cfg.Logger.ErrorContext(ctx, "introspect: cannot authenticate to the introspection endpoint; every token is refused with 503 until this is fixed",
			"endpoint", endpoint, "auth_method", i.cfg.AuthMethod, "err", err)
		return nil, fmt.Errorf("%w: %w", errRejected, err)
	}
	resp, err := fetch.PostForm(ctx, i.client, endpoint, form, header, i.cfg.MaxBytes)
	if err != nil {
		err = i.endpointError(ctx, endpoint, err)
		if errors.Is(err, ErrRefused) {
			i.store(key, nil, i.cfg.Now()) // like "active": false
		}
		return nil, err
	}
	now := i.cfg.Now()
	c, err := i.parseResponse(resp.Body, now)
	switch {
	case err == nil:
		i.store(key, c, now)
	case errors.Is(err, validate.Error{Reason: "inactive"}):
		i.store(key, nil, now)
	case errors.Is(err, validate.Error{Reason: "malformed"}):
		i.cfg.Logger.WarnContext(ctx, "introspect: malformed introspection response", "endpoint", endpoint, "err", err)
	}
	return c, err
}

// endpointError classifies a failed request:
//
//   - 401, 403, and 400 with error invalid_client or unauthorized_client
//     (RFC 6749 §5.2): the endpoint refused our own credentials, a
//     misconfiguration that refuses every token: [ErrClientAuth], 503,
//     logged at Error level;
//   - any other 400 (invalid_request, unsupported_token_type, no error
//     body, …), and 413 (the token is larger than the endpoint accepts;
//     the token is the only part of the request the caller controls): the
//     endpoint refused to judge this token, which the caller chose:
//     [ErrRefused], 401 invalid_token, logged at Debug only, so that junk
//     tokens raise no outage alarm;
//   - anything else (transport failure, timeout, 429, 5xx, other statuses):
//     [ErrEndpoint], 503.
func (i *Introspector) endpointError(ctx context.Context, endpoint string, err error) error {
	var se *fetch.StatusError
	if !errors.As(err, &se) {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	code := ""
	if se.Code == http.StatusBadRequest {
		code = oauthErrorCode(se.Body)
	}
	switch {
	case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden,
		code == codeInvalidClient || code == codeUnauthorizedClient:
		i.cfg.Logger.ErrorContext(ctx, "introspect: the introspection endpoint rejected this resource server's client authentication; check the client credentials. Every token is refused with 503 until this is fixed",
			"endpoint", endpoint, "status", se.Code, "error", code, "auth_method", i.cfg.AuthMethod, "client_id", i.cfg.ClientID)
		return fmt.Errorf("%w: %w", errRejected, err)
	case se.Code == http.StatusBadRequest, se.Code == http.StatusRequestEntityTooLarge:
		i.cfg.Logger.DebugContext(ctx, "introspect: the introspection endpoint refused the token; answered 401", "endpoint", endpoint, "status", se.Code, "error", code)
		return fmt.Errorf("%w: %w", errRefused, err)
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}

// authenticate adds the client authentication of Config.AuthMethod to the
// request's form or header. ctx bounds a token request of "bearer".
func (i *Introspector) authenticate(ctx context.Context, endpoint string, form url.Values, header http.Header) error {
	switch i.cfg.AuthMethod {
	case authBasic:
		header.Set("Authorization", i.basicAuth)
	case authPost:
		form.Set("client_id", i.cfg.ClientID)
		form.Set("client_secret", i.cfg.ClientSecret)
	case authJWT:
		a, err := i.assertion(endpoint, i.cfg.Now())
		if err != nil {
			return fmt.Errorf("signing the client assertion: %w", err)
		}
		form.Set("client_id", i.cfg.ClientID)
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", a)
	case authBearer:
		t, err := i.cfg.TokenSource.Token(ctx)
		if err != nil {
			return fmt.Errorf("token source: %w", err)
		}
		if !t.Valid() {
			return errors.New("token source returned an invalid or expired token")
		}
		// Always Bearer, whatever t.TokenType says: no proof of possession
		// is sent, so any other scheme would be refused anyway.
		header.Set("Authorization", "Bearer "+t.AccessToken)
	}
	return nil
}

// endpoint returns the configured endpoint, or discovers it from the
// issuer's metadata once. A failed discovery is retried at most every
// discoveryBackoff; until then its error is returned at once.
func (i *Introspector) endpoint(ctx context.Context) (string, error) {
	if i.cfg.Endpoint != "" {
		return i.cfg.Endpoint, nil
	}
	if p := i.discovered.Load(); p != nil {
		return *p, nil
	}
	i.discMu.Lock()
	defer i.discMu.Unlock()
	if p := i.discovered.Load(); p != nil {
		return *p, nil
	}
	now := i.cfg.Now()
	if i.discErr != nil && now.Sub(i.discFailed) < discoveryBackoff && !now.Before(i.discFailed) {
		return "", i.discErr
	}
	ep, err := i.discover(ctx)
	if err != nil {
		i.discFailed, i.discErr = now, fmt.Errorf("%w: discovering the endpoint: %w", errUnavailable, err)
		i.cfg.Logger.WarnContext(ctx, "introspect: discovery of the introspection endpoint failed", "issuer", i.cfg.Issuer, "err", err)
		return "", i.discErr
	}
	i.discovered.Store(&ep)
	i.discErr = nil
	i.cfg.Logger.InfoContext(ctx, "introspect: discovered introspection_endpoint", "issuer", i.cfg.Issuer, "endpoint", ep)
	return ep, nil
}

func (i *Introspector) discover(ctx context.Context) (string, error) {
	md, err := asmeta.Discover(ctx, i.client, i.cfg.Issuer)
	if err != nil {
		return "", err
	}
	if md.IntrospectionEndpoint == "" {
		return "", fmt.Errorf("%w: metadata has no introspection_endpoint", asmeta.ErrInvalidMetadata)
	}
	if _, err := fetch.CheckURL(md.IntrospectionEndpoint, true); err != nil {
		return "", fmt.Errorf("%w: introspection_endpoint: %w", asmeta.ErrInvalidMetadata, err)
	}
	return md.IntrospectionEndpoint, nil
}
