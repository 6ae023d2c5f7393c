package jwks

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
)

// Defaults for the zero values of [Config].
const (
	defaultRefreshInterval  = 15 * time.Minute
	defaultRefreshRateLimit = 4 * time.Second
	defaultWaitTimeout      = 2 * time.Second
	defaultFetchTimeout     = 10 * time.Second
	defaultMaxBytes         = 512 << 10
	defaultDeferredWaiters  = 64
)

// Config configures [New]. It is copied; later changes have no effect.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414 §2).
	// Required. When JWKSURL is empty, the jwks_uri is discovered from the
	// issuer's metadata with [asmeta.Discover] (issuer mix-up check
	// included), so Issuer must then be an https URL (http only on loopback
	// hosts). Otherwise it only labels log lines.
	Issuer string
	// JWKSURL is the JWK Set URL. Empty means discover it from Issuer's
	// metadata ("jwks_uri") in the background; the discovered URL is cached,
	// and discovered again if it answers 404 or 410. It must be https, or
	// http on a loopback host.
	JWKSURL string
	// HTTPClient performs the fetches. If nil, a client from internal/fetch
	// is used: FetchTimeout per request, same-origin redirects only (at most
	// 3), no environment proxies, TLS 1.2+. It has no SSRF address guard,
	// because the issuer is operator configuration; pass a guarded client if
	// the issuer or JWKS URL can come from an untrusted party.
	HTTPClient *http.Client
	// RefreshInterval is the period of background refreshes after a
	// successful one (periodic or on-demand). Zero means 15 minutes. After
	// a failed refresh the source retries sooner: 1 s (or RefreshRateLimit
	// if smaller), doubling up to 30 s (or RefreshRateLimit if larger), or
	// later if the server sent Retry-After (never later than
	// RefreshInterval).
	RefreshInterval time.Duration
	// RefreshRateLimit is the minimum time between the starts of two
	// on-demand refreshes (unknown kid, [Source.Refresh] after a failed
	// signature under a known kid, no keys yet); periodic refreshes do not
	// count. When the limit refuses one, a deferred refresh is armed for
	// when the limit opens and the caller waits for it (see
	// DeferredWaiters), so a token signed with a key the authorization
	// server has just published is accepted on its first presentation, at
	// most RefreshRateLimit (plus one fetch) later, while a flood of unknown
	// kids still costs at most one fetch per RefreshRateLimit. Zero means
	// 4 s. See docs/keys.md.
	RefreshRateLimit time.Duration
	// DeferredWaiters caps the calls that wait at the same time for a
	// deferred refresh (each at most until the limit opens plus
	// WaitTimeout, and until its context is done); the calls beyond it fail
	// at once (with [validate.Error] "unknown_key"). Zero means 64. Negative means no call
	// waits: every call the rate limit refuses fails at once (the deferred
	// refresh still runs).
	DeferredWaiters int
	// WaitTimeout is the longest a [Source.Keys] or [Source.Refresh] call
	// waits for a refresh that is running (for a deferred refresh: until
	// the rate limit opens, plus WaitTimeout); the refresh itself continues
	// in the background. Zero means 2 s. A call never waits longer than the
	// refresh can run (FetchTimeout).
	WaitTimeout time.Duration
	// FetchTimeout bounds one refresh (discovery, if needed, plus the JWKS
	// GET). Zero means 10 s.
	FetchTimeout time.Duration
	// MaxBytes caps the JWK Set body after decompression. Zero means 512 KiB.
	MaxBytes int64
	// Storage, if set, receives a copy of every accepted key set
	// (KeyReplaceAll), so the keys can be inspected or exported (pass a
	// jwkset.NewMemoryStorage and read it). It is written to, never read
	// from, on the request path. If nil, nothing is mirrored.
	Storage jwkset.Storage
	// Logger receives refresh failures, dropped keys and recoveries. If nil,
	// nothing is logged. Tokens are never logged.
	Logger *slog.Logger
	// Now is the clock for rate limiting and [Health].LastSuccess. If nil,
	// time.Now. Timers (refresh period, backoff, waits, the deferred
	// refresh) use real time; a deferred refresh starts only if Now agrees
	// that the rate limit has opened.
	Now func() time.Time

	// Observer, if set, is told when each refresh starts and ends, for
	// metrics and traces (package otelguard adapts it to OpenTelemetry).
	// Nil costs nothing. See [RefreshObserver].
	Observer RefreshObserver
}

// withDefaults returns c with zero values replaced by defaults. It reports
// whether it created the HTTP client (the Source then owns it).
func (c Config) withDefaults() (Config, bool) {
	if c.RefreshInterval == 0 {
		c.RefreshInterval = defaultRefreshInterval
	}
	if c.RefreshRateLimit == 0 {
		c.RefreshRateLimit = defaultRefreshRateLimit
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = defaultWaitTimeout
	}
	if c.FetchTimeout == 0 {
		c.FetchTimeout = defaultFetchTimeout
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = defaultMaxBytes
	}
	switch {
	case c.DeferredWaiters == 0:
		c.DeferredWaiters = defaultDeferredWaiters
	case c.DeferredWaiters < 0:
		c.DeferredWaiters = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	owned := false
	if c.HTTPClient == nil && c.FetchTimeout > 0 {
		c.HTTPClient = fetch.NewClient(fetch.ClientConfig{Redirects: fetch.SameOrigin, Timeout: c.FetchTimeout})
		owned = true
	}
	return c, owned
}

// check validates c after defaults were applied.
func (c Config) check() error {
	switch {
	case c.Issuer == "":
		return fmt.Errorf("%w: Issuer is required", ErrConfig)
	case c.RefreshInterval < 0, c.RefreshRateLimit < 0, c.WaitTimeout < 0, c.FetchTimeout < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.MaxBytes < 0:
		return fmt.Errorf("%w: negative MaxBytes", ErrConfig)
	}
	if c.JWKSURL != "" {
		if _, err := fetch.CheckURL(c.JWKSURL, true); err != nil {
			return fmt.Errorf("%w: JWKSURL: %w", ErrConfig, err)
		}
		return nil
	}
	if _, err := asmeta.WellKnownURLs(c.Issuer); err != nil {
		return fmt.Errorf("%w: Issuer (needed for discovery without JWKSURL): %w", ErrConfig, err)
	}
	return nil
}
