package jwks

import (
	"context"
	"fmt"
	"time"
)

// maxRetryBackoff caps the background retry delay after failed refreshes
// when RefreshRateLimit is shorter: a short rate limit makes key rotation
// fast, and must not also make an outage of the authorization server cost
// a fetch every few seconds.
const maxRetryBackoff = 30 * time.Second

// deferredRetry is how soon a deferred refresh that found another refresh
// running tries again.
const deferredRetry = 100 * time.Millisecond

// sched is the refresh schedule state besides the loop's own timer.
// deferred is guarded by Source.mu.
type sched struct {
	// deferred is the refresh armed when the rate limit refused an
	// on-demand one; nil when none is armed. It fires when the limit opens,
	// so a key published just after a refresh is fetched at most
	// RefreshRateLimit after the first request that needed it, whether or
	// not that request (or any other) comes back. Any refresh that starts
	// in the meantime satisfies it and cancels it.
	deferred *time.Timer
	gen      uint64 // identifies the armed timer to its callback
	// pending is the flight of the deferred refresh, created when the rate
	// limit first refuses and adopted by whichever refresh starts next
	// (startLocked), so its waiters see a fetch that began after they
	// asked. fireAt is when the armed timer fires (real time); waiters
	// counts the calls waiting for pending (Config.DeferredWaiters caps it).
	pending *flight
	fireAt  time.Time
	waiters int
	// kick wakes the loop after an on-demand refresh succeeded, so that it
	// leaves its failure backoff for the normal RefreshInterval. Buffered 1.
	kick chan struct{}
}

// deferLocked arms the deferred refresh to fire after d, unless one is
// armed already; s.mu is held.
func (s *Source) deferLocked(d time.Duration) {
	if s.sched.deferred != nil || s.closed {
		return
	}
	if s.sched.pending == nil {
		s.sched.pending = &flight{done: make(chan struct{})}
	}
	s.sched.gen++
	gen := s.sched.gen
	s.sched.fireAt = time.Now().Add(d)
	s.sched.deferred = time.AfterFunc(d, func() { s.fireDeferred(gen) })
}

// awaitDeferred waits for the deferred refresh armed by a refused
// on-demand start, and returns its error. It waits until the armed timer
// fires plus WaitTimeout at most (the refresh goes on afterwards), or until
// ctx is done. It fails at once with errRateLimited when no deferred
// refresh is pending or Config.DeferredWaiters calls wait already, and
// with errRateLimited and errWaitTimeout when the wait runs out.
func (s *Source) awaitDeferred(ctx context.Context) error {
	s.mu.Lock()
	f := s.sched.pending
	if f == nil || s.sched.waiters >= s.cfg.DeferredWaiters {
		s.mu.Unlock()
		return errRateLimited
	}
	s.sched.waiters++
	wait := time.Until(s.sched.fireAt) + s.cfg.WaitTimeout
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.sched.waiters--
		s.mu.Unlock()
	}()
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-f.done:
		return f.err
	case <-t.C:
		return fmt.Errorf("%w: %w", errRateLimited, errWaitTimeout)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errRateLimited, ctx.Err())
	}
}

// cancelDeferredLocked disarms the deferred refresh; s.mu is held.
func (s *Source) cancelDeferredLocked() {
	if s.sched.deferred != nil {
		s.sched.deferred.Stop()
		s.sched.deferred = nil
	}
}

// fireDeferred starts the deferred refresh gen, if it is still the armed
// one.
// It re-checks the rate limit against Config.Now: with the real clock it
// is open by construction; an injected clock that has not moved (a test)
// makes it a no-op that releases its waiters with errRateLimited, and
// the next refused request arms it again.
func (s *Source) fireDeferred(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sched.deferred == nil || s.sched.gen != gen {
		return
	}
	s.sched.deferred = nil
	if s.closed {
		return
	}
	if s.running != nil {
		// A refresh that started before the deferral is running: the
		// deferred one follows it, for the keys published meanwhile.
		s.deferLocked(min(s.cfg.RefreshRateLimit, deferredRetry))
		return
	}
	now := s.cfg.Now()
	if now.Sub(s.lastDemand) < s.cfg.RefreshRateLimit {
		// Its waiters are released rather than kept until their deadline.
		if p := s.sched.pending; p != nil {
			s.sched.pending = nil
			p.err = errRateLimited
			close(p.done)
		}
		return
	}
	s.lastDemand = now
	s.startLocked(context.Background(), true)
	s.log.Debug("jwks: deferred refresh started (an earlier one was rate limited)")
}

// kickLoop tells the loop that an on-demand refresh succeeded.
func (s *Source) kickLoop() {
	select {
	case s.sched.kick <- struct{}{}:
	default: // a kick is pending already
	}
}

// lastOK reports whether the most recent refresh succeeded.
func (s *Source) lastOK() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr == nil && !s.lastSuccess.IsZero()
}
