package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
)

var _ validate.KeySource = (*Source)(nil)

// Source is a remote JWK Set (RFC 7517) kept fresh in the background. It
// implements [validate.KeySource], and [Source.Refresh] lets a Validator
// refresh on demand. Create it with
// [New] and stop it with [Source.Close]. It is safe for concurrent use.
type Source struct {
	cfg         Config
	ownClient   bool // cfg.HTTPClient was created by New; Close releases it
	log         *slog.Logger
	set         atomic.Pointer[keySet] // nil until the first good set
	stop        chan struct{}
	stopOnce    sync.Once
	wg          sync.WaitGroup // the loop, on-demand refresh runners, fetch watchers
	fetches     atomic.Int64
	failures    atomic.Int64
	discovered  string // cached jwks_uri; touched only by the running refresh (refreshes never overlap)
	mu          sync.Mutex
	running     *flight   // the refresh in progress, nil when idle
	lastDemand  time.Time // start of the last on-demand refresh
	sched       sched     // deferred refresh and loop wake-up (schedule.go)
	closed      bool
	lastErr     error
	lastSuccess time.Time
	health      healthState // health.go; under mu
}

// flight is one refresh. err is written before done is closed; onDemand
// is set when it starts (false for the loop's periodic refreshes), under
// Source.mu. A deferred refresh's flight exists before it starts, so that
// calls can wait for it (schedule.go). joined counts the begin calls that
// joined it rather than starting it (under Source.mu); only tests read it.
type flight struct {
	done     chan struct{}
	err      error
	onDemand bool
	joined   int
}

// New validates cfg and starts the source. It never blocks on the network:
// one background goroutine performs the first fetch at once and then
// refreshes every RefreshInterval (sooner after failures). [Source.Keys]
// calls made while the first fetch runs wait for it up to WaitTimeout.
// Call [Source.Close] to stop it. Errors wrap [ErrConfig].
func New(cfg Config) (*Source, error) {
	cfg, owned := cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Source{
		cfg:       cfg,
		ownClient: owned,
		log:       cfg.Logger.With("issuer", cfg.Issuer),
		stop:      make(chan struct{}),
		sched:     sched{kick: make(chan struct{}, 1)},
		health:    newHealthState(),
	}
	first := &flight{done: make(chan struct{})}
	s.running = first
	s.wg.Add(1)
	go s.loop(first)
	return s, nil
}

// Keys returns the usable keys published under kid; for the empty kid (a
// token without one, RFC 7515 §4.1.4), every usable key of the set, with or
// without a kid. A kid in the current set is answered from an immutable
// snapshot, without locks or allocation; the returned slice and keys are
// shared and must not be modified.
//
// For an unknown kid (or when no set has been obtained yet), Keys waits up
// to WaitTimeout (and at most until ctx is done) for a refresh that is
// running; otherwise, if RefreshRateLimit allows, it starts one on-demand
// refresh, which runs with its own FetchTimeout and survives ctx, and waits
// for it the same way. If the rate limit refuses, a deferred refresh is
// armed for the moment the limit opens (one, however many requests were
// refused), and the call waits for it: until the limit opens plus
// WaitTimeout at most, and only if fewer than DeferredWaiters calls are
// waiting already; otherwise it fails at once with errRateLimited. So a
// key the issuer published after the last refresh is served on its first
// presentation, at most RefreshRateLimit plus one fetch later. If the
// refresh it joined failed, it does not start another. Every waiter of one
// refresh shares it, so a storm of unknown kids costs at most one fetch per
// RefreshRateLimit.
//
// Errors wrap [validate.Error] "unknown_key" when a key set is being served, or
// [validate.ErrKeysUnavailable] (with the last fetch error) when none has
// ever been obtained; they may also wrap errRateLimited, errWaitTimeout,
// errClosed or ctx's error.
func (s *Source) Keys(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	set := s.set.Load()
	if ks, ok := set.lookup(kid); ok {
		return ks, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, s.missErr(err) // a caller that is gone starts nothing
	}
	return s.keysSlow(ctx, kid, set)
}

// keysSlow handles a miss on the snapshot seen. It joins a refresh that is
// running (it may predate the new kid); after a successful one it may start
// its own if the limit allows, or wait for the deferred one; after a failed
// one it stops. If another refresh replaced the snapshot in the meantime,
// it looks again first.
func (s *Source) keysSlow(ctx context.Context, kid string, seen *keySet) ([]jose.JSONWebKey, error) {
	deadline := time.NewTimer(s.cfg.WaitTimeout)
	defer deadline.Stop()
	for range 3 {
		f, owned, err := s.begin(ctx, true, seen)
		if err == errSetChanged {
			seen = s.set.Load()
			if ks, ok := seen.lookup(kid); ok {
				return ks, nil
			}
			continue
		}
		if errors.Is(err, errRateLimited) {
			if err = s.awaitDeferred(ctx); err != nil {
				return nil, s.missErr(err)
			}
			if ks, ok := s.set.Load().lookup(kid); ok {
				return ks, nil
			}
			return nil, s.missErr(nil)
		}
		if err != nil {
			return nil, s.missErr(err)
		}
		select {
		case <-f.done:
		case <-deadline.C:
			return nil, s.missErr(errWaitTimeout)
		case <-ctx.Done():
			return nil, s.missErr(ctx.Err())
		}
		seen = s.set.Load()
		if ks, ok := seen.lookup(kid); ok {
			return ks, nil
		}
		if owned || f.err != nil {
			break
		}
	}
	return nil, s.missErr(nil)
}

// lookup is a nil-safe snapshot read.
func (set *keySet) lookup(kid string) ([]jose.JSONWebKey, bool) {
	if set == nil {
		return nil, false
	}
	if kid == "" {
		return set.all, len(set.all) > 0
	}
	ks, ok := set.byKID[kid]
	return ks, ok
}

// Refresh fetches the key set now, for a caller that saw a signature fail
// under a known kid (re-keying under an unchanged kid) or under every key a
// token without a kid could use. It joins a refresh that is already
// running; otherwise it starts one if RefreshRateLimit allows, and if not
// it waits for the deferred refresh as [Source.Keys] does (bounded the
// same way; errRateLimited when DeferredWaiters calls wait already). A
// periodic refresh it joined may have fetched the set before the new key
// was published, so after one Refresh asks once more (rate-limited or
// deferred) before it returns. It waits at most WaitTimeout for a running
// refresh (errWaitTimeout; the refresh goes on) or until ctx is done. It
// returns the refresh's error: a failed refresh keeps the previous set.
func (s *Source) Refresh(ctx context.Context) error {
	t := time.NewTimer(s.cfg.WaitTimeout)
	defer t.Stop()
	for attempt := range 2 {
		f, owned, err := s.begin(ctx, true, s.set.Load())
		switch {
		case err == errSetChanged:
			return nil // a refresh completed this very moment
		case errors.Is(err, errRateLimited):
			werr := s.awaitDeferred(ctx)
			if attempt > 0 && errors.Is(werr, errRateLimited) {
				return nil // the periodic refresh joined succeeded; the deferred one follows
			}
			return werr
		case err != nil:
			return err
		}
		select {
		case <-f.done:
		case <-t.C:
			return errWaitTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
		if owned || f.onDemand || f.err != nil {
			return f.err
		}
	}
	return nil
}

// Close stops the background goroutine, aborts a running fetch and waits
// for every goroutine of the source to end. Keys already fetched are still
// served afterwards; nothing is fetched again. Close is idempotent and
// always returns nil.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cancelDeferredLocked()
	if p := s.sched.pending; p != nil { // its waiters must not wait for a refresh that never comes
		s.sched.pending = nil
		p.err = errClosed
		close(p.done)
	}
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	if s.ownClient {
		s.cfg.HTTPClient.CloseIdleConnections()
	}
	return nil
}

// errSetChanged tells an on-demand caller that the snapshot it missed on
// has been replaced since it looked; it should look again before fetching.
var errSetChanged = errors.New("jwks: key set changed")

// begin returns the running refresh, or starts one. owned reports that the
// caller's request started it. An on-demand start is refused with
// errRateLimited within RefreshRateLimit of the previous one (and a
// deferred refresh is armed for when the limit opens), with errSetChanged
// if the snapshot is no longer seen (the one the caller missed on), and
// any start with errClosed after Close. An on-demand flight gets its own
// goroutine, running under ctx's values (not its cancellation, so that
// one impatient caller cannot fail the others); the loop runs its own
// flights inline.
func (s *Source) begin(ctx context.Context, onDemand bool, seen *keySet) (f *flight, owned bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		s.running.joined++
		return s.running, false, nil
	}
	if s.closed {
		return nil, false, errClosed
	}
	if onDemand && s.set.Load() != seen {
		return nil, false, errSetChanged
	}
	if onDemand {
		now := s.cfg.Now()
		if since := now.Sub(s.lastDemand); !s.lastDemand.IsZero() && since < s.cfg.RefreshRateLimit {
			s.deferLocked(s.cfg.RefreshRateLimit - since)
			return nil, false, errRateLimited
		}
		s.lastDemand = now
	}
	return s.startLocked(ctx, onDemand), true, nil
}

// startLocked creates and publishes a flight; s.mu is held. Any start
// satisfies a deferred refresh, which it cancels; the flight its waiters
// wait for is this one.
func (s *Source) startLocked(ctx context.Context, onDemand bool) *flight {
	s.cancelDeferredLocked()
	f := s.sched.pending
	if f == nil {
		f = &flight{done: make(chan struct{})}
	}
	s.sched.pending = nil
	f.onDemand = onDemand
	s.running = f
	if onDemand {
		parent := context.WithoutCancel(ctx)
		s.wg.Add(1) // under mu and before closed: ordered before Close's Wait
		go func() {
			defer s.wg.Done()
			s.run(parent, f, true)
		}()
	}
	return f
}

// missErr builds the error for a kid that is not served.
func (s *Source) missErr(cause error) error {
	if s.set.Load() == nil {
		s.mu.Lock()
		last := s.lastErr
		s.mu.Unlock()
		switch {
		case last != nil && cause != nil:
			return fmt.Errorf("%w: %w (%w)", validate.ErrKeysUnavailable, last, cause)
		case last != nil:
			return fmt.Errorf("%w: %w", validate.ErrKeysUnavailable, last)
		case cause != nil:
			return fmt.Errorf("%w: %w", validate.ErrKeysUnavailable, cause)
		}
		return validate.ErrKeysUnavailable
	}
	if cause != nil {
		return fmt.Errorf("%w: %w", validate.Error{Reason: "unknown_key"}, cause)
	}
	return validate.Error{Reason: "unknown_key"}
}
