package cimd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// Resolver defaults.
const (
	defaultMaxBytes             = 5 << 10 // draft-00 §6.6: 5 kilobytes
	defaultTimeout              = 5 * time.Second
	defaultMaxConcurrentFetches = 16
	defaultMinCacheTTL          = 5 * time.Minute
	defaultMaxCacheTTL          = 24 * time.Hour
	defaultCacheSize            = 1024
	defaultGlobalFetchRate      = rate.Limit(20)
	defaultGlobalFetchBurst     = 40
	defaultHostFetchRate        = rate.Limit(2)
	defaultHostFetchBurst       = 10
	defaultMaxHosts             = 4096
)

// ResolverConfig configures [NewResolver]. The zero value is a safe
// production configuration.
type ResolverConfig struct {
	// HTTPClient fetches documents. If nil, a client from the internal
	// fetch package is built from this config: its dialer refuses every
	// address that is not public unicast (checked on the IP actually
	// dialled, after DNS), only ports in AllowedPorts, no proxies, no
	// redirects, TLS 1.2+.
	//
	// A non-nil client BYPASSES that SSRF guard unless you built it with
	// an equivalent dialer. Size cap, media type, status, deadline, rate
	// limits and validation still apply.
	HTTPClient *http.Client
	// Timeout bounds one fetch from start to the last body byte, including
	// the wait for a fetch slot. Zero means 5 s.
	Timeout time.Duration
	// MaxBytes caps the document after decompression. Zero means
	// 5 KiB, draft-00 §6.6.
	MaxBytes int64
	// AllowedPorts are the destination ports the SSRF guard permits. Nil
	// means 443 only.
	AllowedPorts []uint16
	// InsecureAllowLoopback lets the SSRF guard dial loopback addresses
	// (127.0.0.0/8, ::1) on any port. DANGEROUS: for tests and local
	// development against httptest TLS servers only. Off by default.
	InsecureAllowLoopback bool
	// RootCAs, when non-nil, replaces the system roots used to verify
	// document servers (for test CAs). Ignored when HTTPClient is set.
	RootCAs *x509.CertPool
	// AllowQuery accepts client_id URLs with a query component, which
	// draft-00 §3 says SHOULD NOT be used. Off by default.
	AllowQuery bool
	// AllowPrivateUseSchemes accepts redirect URIs with a reverse-domain
	// private-use scheme such as "com.example.app:/cb" (RFC 8252 §7.1).
	// Off by default: anyone can claim such a scheme on a device.
	AllowPrivateUseSchemes bool
	// MinCacheTTL is the shortest time a valid document is cached (unless
	// the response says no-store or no-cache). Zero means
	// 5 min.
	MinCacheTTL time.Duration
	// MaxCacheTTL is the longest time a document is cached whatever its
	// max-age. Zero means 24 h.
	MaxCacheTTL time.Duration
	// CacheSize is the number of documents kept, shared fairly between
	// the hosts serving them: when full, the least recently used document
	// of the host holding the most leaves. Zero means 1024.
	CacheSize int
	// MaxConcurrentFetches caps fetches in flight; further fetches wait
	// for a slot until their deadline, then fail with Reason "rate_limited" ([Error]).
	// Zero means 16.
	MaxConcurrentFetches int
	// GlobalFetchRate and GlobalFetchBurst bound fetches across all hosts
	// (a token bucket). Zero means 20 per second and
	// a burst of 40; rate.Inf disables the limit. One site (a host name's
	// last two labels, an IP literal's /24 or /48), however many hosts it
	// spreads over, gets at most half of it (a bucket of half the rate
	// and burst), so that it cannot exhaust the fetches of other sites.
	GlobalFetchRate  rate.Limit
	GlobalFetchBurst int
	// HostFetchRate and HostFetchBurst bound fetches per host name. Zero
	// means 2 per second and a burst of 10.
	HostFetchRate  rate.Limit
	HostFetchBurst int
	// MaxHosts bounds the per-host limiters kept, and the per-site ones,
	// shared fairly by site: a full map evicts a least recently used
	// limiter of the site holding the most. Zero means 4096.
	MaxHosts int
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
}

func (c ResolverConfig) withDefaults() ResolverConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Timeout, defaultTimeout)
	def(&c.MinCacheTTL, defaultMinCacheTTL)
	def(&c.MaxCacheTTL, defaultMaxCacheTTL)
	if c.MaxBytes == 0 {
		c.MaxBytes = defaultMaxBytes
	}
	defInt(&c.CacheSize, defaultCacheSize)
	defInt(&c.MaxConcurrentFetches, defaultMaxConcurrentFetches)
	defInt(&c.GlobalFetchBurst, defaultGlobalFetchBurst)
	defInt(&c.HostFetchBurst, defaultHostFetchBurst)
	defInt(&c.MaxHosts, defaultMaxHosts)
	if c.GlobalFetchRate == 0 {
		c.GlobalFetchRate = defaultGlobalFetchRate
	}
	if c.HostFetchRate == 0 {
		c.HostFetchRate = defaultHostFetchRate
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c ResolverConfig) check() error {
	switch {
	case c.Timeout < 0, c.MaxBytes < 0, c.MinCacheTTL < 0, c.MaxCacheTTL < 0,
		c.CacheSize < 0, c.MaxConcurrentFetches < 0, c.GlobalFetchBurst < 0,
		c.HostFetchBurst < 0, c.MaxHosts < 0, c.GlobalFetchRate < 0, c.HostFetchRate < 0:
		return fmt.Errorf("%w: negative value in ResolverConfig", errConfig)
	case c.MinCacheTTL > c.MaxCacheTTL:
		return fmt.Errorf("%w: MinCacheTTL above MaxCacheTTL", errConfig)
	}
	return nil
}

// Resolver fetches, validates and caches Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document-00). It is safe for
// concurrent use.
type Resolver struct {
	cfg    ResolverConfig
	pol    policy
	client *http.Client
	cache  *docCache
	limits *limiter
	slots  chan struct{}
	flight singleflight.Group
	// waits counts Resolve calls waiting on a shared fetch and fetches
	// waiting for a slot; only tests read them, to see that calls are
	// queued rather than sleep.
	waits struct{ flight, slot atomic.Int64 }
}

// NewResolver returns a Resolver for cfg (copied; see [ResolverConfig] for
// the defaults). It fails with an [*Error] with Reason "config" on negative values or
// MinCacheTTL > MaxCacheTTL.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.AllowedPorts = append([]uint16(nil), cfg.AllowedPorts...) // empty => nil => 443
	c := cfg.HTTPClient
	if c == nil {
		c = fetch.NewClient(fetch.ClientConfig{
			Timeout:               cfg.Timeout,
			GuardAddresses:        true,
			AllowedPorts:          cfg.AllowedPorts,
			InsecureAllowLoopback: cfg.InsecureAllowLoopback,
			RootCAs:               cfg.RootCAs,
		})
	}
	return &Resolver{
		cfg:    cfg,
		pol:    cimdPolicy(cfg.AllowPrivateUseSchemes),
		client: c,
		cache:  newDocCache(cfg.CacheSize),
		limits: newLimiter(cfg.GlobalFetchRate, cfg.GlobalFetchBurst, cfg.HostFetchRate, cfg.HostFetchBurst, cfg.MaxHosts, hostPartition),
		slots:  make(chan struct{}, cfg.MaxConcurrentFetches),
	}, nil
}

// Resolve returns the validated Client ID Metadata Document for clientID,
// from the cache or by fetching clientID itself (draft-00 §4). Concurrent
// calls for the same clientID share one fetch. The returned Document is
// the caller's to modify.
//
// Errors wrap an [*Error] whose Reason says which check failed. Log
// them; answer the client with "invalid_client" and one fixed
// description. Failures are never cached.
func (r *Resolver) Resolve(ctx context.Context, clientID string) (*Document, error) {
	if err := checkClientIDURL(clientID, r.cfg.AllowQuery); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", errFetch, context.Cause(ctx))
	}
	if c, ok := r.cache.get(clientID, r.cfg.Now()); ok {
		return c.doc.clone(), nil
	}
	// The fetch runs detached from the first caller's cancellation, so
	// that one impatient caller does not fail the others sharing it; it is
	// bounded by Timeout instead. Each caller still stops waiting when its
	// own ctx ends.
	ch := r.flight.DoChan(clientID, func() (any, error) {
		return r.fetch(context.WithoutCancel(ctx), clientID)
	})
	r.waits.flight.Add(1)
	defer r.waits.flight.Add(-1)
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Document).clone(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errFetch, context.Cause(ctx))
	}
}

// fetch performs one rate-limited, bounded fetch and caches a valid result.
func (r *Resolver) fetch(ctx context.Context, clientID string) (*Document, error) {
	u, err := url.Parse(clientID)
	if err != nil { // checked by checkClientIDURL already
		return nil, fmt.Errorf("%w: unparsable", errNotClientIDURL)
	}
	if ok, _ := r.limits.reserve(strings.ToLower(u.Hostname()), r.cfg.Now()); !ok {
		return nil, fmt.Errorf("%w: fetch rate exceeded", errRateLimited)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	r.waits.slot.Add(1)
	select {
	case r.slots <- struct{}{}:
		r.waits.slot.Add(-1)
		defer func() { <-r.slots }()
	case <-ctx.Done():
		r.waits.slot.Add(-1)
		return nil, fmt.Errorf("%w: no fetch slot before the deadline", errRateLimited)
	}

	resp, err := fetch.Get(ctx, r.client, clientID, r.cfg.MaxBytes)
	if err != nil {
		return nil, fetchError(err)
	}
	doc, err := parseDocument(resp.Body, clientID, r.pol)
	if err != nil {
		return nil, err
	}
	if ttl, ok := cacheLifetime(resp.Header, r.cfg.MinCacheTTL, r.cfg.MaxCacheTTL); ok {
		now := r.cfg.Now()
		r.cache.add(strings.ToLower(u.Host), clientID, cached{doc: doc, expires: now.Add(ttl)}, now)
	}
	return doc, nil
}

// fetchError maps an internal fetch error to this package's sentinels,
// keeping the original in the chain for logs.
func fetchError(err error) error {
	var sentinel error
	switch {
	case errors.Is(err, fetch.ErrForbiddenAddress):
		sentinel = errForbiddenAddress
	case errors.Is(err, fetch.ErrStatus):
		sentinel = errStatus
	case errors.Is(err, fetch.ErrContentType):
		sentinel = errContentType
	case errors.Is(err, fetch.ErrTooLarge):
		sentinel = errTooLarge
	default:
		sentinel = errFetch
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
