package jwks

import (
	"context"
	"time"
)

// maxRetryBackoff caps the background retry delay after failed refreshes
// when RefreshRateLimit is shorter: a short rate limit makes key rotation
// fast, and must not also make an outage of the authorization server cost
// a fetch every few seconds.
const maxRetryBackoff = 30 * time.Second

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
	s.sched.gen++
	gen := s.sched.gen
	s.sched.deferred = time.AfterFunc(d, func() { s.fireDeferred(gen) })
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
// makes it a no-op, and the next refused request arms it again.
func (s *Source) fireDeferred(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sched.deferred == nil || s.sched.gen != gen {
		return
	}
	s.sched.deferred = nil
	if s.closed || s.running != nil {
		return
	}
	now := s.cfg.Now()
	if now.Sub(s.lastDemand) < s.cfg.RefreshRateLimit {
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
