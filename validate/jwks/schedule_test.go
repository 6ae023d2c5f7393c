package jwks

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate"
)

// realClockConfig is testConfig with the real clock, for the deferred
// refresh, whose timer runs on real time.
func realClockConfig(t *testing.T, f *fakeJWKS, limit time.Duration) Config {
	cfg := testConfig(t, f, newClock())
	cfg.Now = nil
	cfg.RefreshRateLimit = limit
	cfg.DeferredWaiters = 0 // the default: refused calls wait for the deferred refresh
	return cfg
}

// TestDeferredRefreshServesNewKid: a kid published just after an on-demand
// refresh is served on its first presentation, inside the rate limit: the
// call waits for the deferred refresh (about the rest of the limit), which
// is the only fetch; with DeferredWaiters negative it is refused at once and
// the deferred refresh still fetches it without any further request.
func TestDeferredRefreshServesNewKid(t *testing.T) {
	const limit = 300 * time.Millisecond
	for _, waiters := range []int{0, -1} {
		t.Run(fmt.Sprintf("DeferredWaiters=%d", waiters), func(t *testing.T) {
			k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
			f := newFake(t, k1)
			cfg := realClockConfig(t, f, limit)
			cfg.DeferredWaiters = waiters
			s := newSource(t, cfg)
			waitFirst(t, s)

			if _, err := s.Keys(t.Context(), "junk"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
				t.Fatalf("Keys(junk) = %v", err)
			}
			if got := f.hits.Load(); got != 2 {
				t.Fatalf("fetches after the first unknown kid = %d, want 2", got)
			}
			f.setKeys(t, k1, k2) // published right after that refresh
			seen := time.Now()
			ks, err := s.Keys(t.Context(), "k2")
			took := time.Since(seen)
			if waiters < 0 {
				// Refused without waiting: a waiter returns the deferred
				// refresh's outcome (k2, or errWaitTimeout), never a bare
				// errRateLimited.
				if !errors.Is(err, errRateLimited) || errors.Is(err, errWaitTimeout) {
					t.Fatalf("Keys(k2) inside the limit = %v after %v, want %v at once", err, took, errRateLimited)
				}
				eventually(t, eventWait, func() bool { return f.hits.Load() == 3 && s.idle() })
				took = time.Since(seen)
				ks, err = s.Keys(t.Context(), "k2")
			}
			// Served at all means the wait ended with the deferred
			// refresh, not on its deadline (the armed timer plus
			// WaitTimeout; then errWaitTimeout). When the timer is armed
			// is TestDeferredRefreshArmedForLimit's.
			if err != nil || len(ks) != 1 {
				t.Fatalf("Keys(k2) = %v, %v; want the new key", ks, err)
			}
			if got := f.hits.Load(); got != 3 {
				t.Errorf("fetches = %d, want 3 (the deferred refresh only)", got)
			}
			// No further timer: none is armed once it has run.
			eventually(t, eventWait, s.idle)
			if s.deferredArmed() {
				t.Error("a deferred refresh is armed again after the deferred refresh ran")
			}
			t.Logf("new kid served %v after it was first asked for (limit %v)", took, limit)
		})
	}
}

// TestDeferredRefreshArmedForLimit: a refused on-demand refresh arms the
// deferred one for the moment the rate limit opens, by Config.Now: the
// rest of the limit after the last on-demand start. On the pinned clock
// that rest is exact, and the timer's firing time (real time, what its
// waiters wait for) lies between the real times just before and just
// after the refused call, plus that rest; the limit is an hour, so the
// timer never fires during the test.
func TestDeferredRefreshArmedForLimit(t *testing.T) {
	const limit = time.Hour
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	cfg := testConfig(t, f, clk)
	cfg.RefreshRateLimit = limit
	s := newSource(t, cfg)
	waitFirst(t, s)
	_, _ = s.Keys(t.Context(), "a") // on-demand fetch 2, the limit starts now
	clk.Advance(limit / 4)
	before := time.Now()
	if _, err := s.Keys(t.Context(), "b"); !errors.Is(err, errRateLimited) {
		t.Fatalf("Keys(b) = %v, want %v", err, errRateLimited)
	}
	after := time.Now()
	s.mu.Lock()
	armed, fireAt := s.sched.deferred != nil, s.sched.fireAt
	s.mu.Unlock()
	if !armed {
		t.Fatal("no deferred refresh armed after a refused Keys")
	}
	rest := limit - limit/4
	if at := fireAt.Sub(before); at < rest || fireAt.After(after.Add(rest)) {
		t.Errorf("deferred refresh armed to fire %v after the refused call began, want %v (the rest of the limit; the call took %v)", at, rest, after.Sub(before))
	}
}

// TestDeferredWaitersBounded: the calls that wait for one deferred refresh
// share its one fetch; beyond DeferredWaiters they fail at once, and a
// waiter whose context ends stops waiting. A call is told apart by its
// outcome, not its latency: a waiter gets the deferred refresh's outcome
// (unknown_key alone: the refresh succeeded without the kid), a refused
// call errRateLimited. Nothing is timed: on the pinned clock with a limit
// (and WaitTimeout) of an hour the deferred refresh's timer never fires
// during the test, so the whole flood arrives within the limit however
// loaded the machine; once 8 calls were refused and 4 wait, the test opens
// the limit and starts a refresh, which any start adopts as the deferred
// one, and its outcome releases the waiters.
func TestDeferredWaitersBounded(t *testing.T) {
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	cfg := noWait(testConfig(t, f, clk))
	cfg.DeferredWaiters = 4
	s := newSource(t, cfg)
	waitFirst(t, s)
	_, _ = s.Keys(t.Context(), "junk") // on-demand fetch 2
	var (
		wg            sync.WaitGroup
		waited, fast  atomic.Int64
		unexpectedErr atomic.Value
	)
	start := make(chan struct{})
	for i := range 12 {
		wg.Go(func() {
			<-start
			_, err := s.Keys(context.Background(), fmt.Sprintf("flood-%d", i))
			switch {
			case !errors.Is(err, validate.Error{Reason: "unknown_key"}), errors.Is(err, errWaitTimeout):
				unexpectedErr.Store(err)
			case errors.Is(err, errRateLimited):
				fast.Add(1)
			default:
				waited.Add(1)
			}
		})
	}
	close(start)
	if !waitFor(func() bool { return fast.Load() == 8 && s.deferredWaiters() == 4 }) {
		t.Errorf("%d calls refused at once and %d waiting, want 8 and DeferredWaiters (4)", fast.Load(), s.deferredWaiters())
	}
	clk.Advance(cfg.RefreshRateLimit)
	if err := s.Refresh(t.Context()); err != nil { // fetch 3, the deferred one
		t.Fatalf("Refresh = %v", err)
	}
	wg.Wait()
	if e := unexpectedErr.Load(); e != nil {
		t.Fatalf("Keys(flood) = %v, want %v", e, validate.Error{Reason: "unknown_key"})
	}
	if waited.Load() != 4 || fast.Load() != 8 {
		t.Errorf("%d calls waited and %d were refused at once, want DeferredWaiters (4) and 8", waited.Load(), fast.Load())
	}
	if got := f.hits.Load(); got != 3 {
		t.Errorf("fetches = %d, want 3 (one deferred refresh for the whole flood)", got)
	}
	// A waiter whose context ends stops waiting: its error says so (the
	// deferred refresh it waits for fires a whole limit later).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Keys(ctx, "late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Keys with a short context = %v, want %v", err, context.DeadlineExceeded)
	}
}

// deferredWaiters is the number of calls waiting for the deferred refresh.
func (s *Source) deferredWaiters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.waiters
}

// waitFor polls cond every millisecond for at most eventWait and reports
// whether it became true.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(eventWait); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// TestUnknownKidFloodRealClock floods unknown kids for a bounded time with
// the real clock and counts fetches: at most one per RefreshRateLimit,
// deferred refreshes included, and every refused call returns at once.
func TestUnknownKidFloodRealClock(t *testing.T) {
	const (
		limit = 200 * time.Millisecond
		span  = 1200 * time.Millisecond
	)
	f := newFake(t, ecJWK(t, "k1"))
	cfg := realClockConfig(t, f, limit)
	// A call runs out its wait (errWaitTimeout) only if the deferred
	// refresh it waits for does not release it: a bug, never the load.
	cfg.WaitTimeout = eventWait
	s := newSource(t, cfg)
	waitFirst(t, s)
	before := f.hits.Load()
	start := time.Now()

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		maxLat time.Duration
		calls  int
	)
	stop := time.Now().Add(span)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				st := time.Now()
				_, err := s.Keys(context.Background(), fmt.Sprintf("flood-%d-%d", w, i))
				d := time.Since(st)
				if !errors.Is(err, validate.Error{Reason: "unknown_key"}) || errors.Is(err, errWaitTimeout) {
					t.Errorf("Keys(flood) = %v, want %v, released by the refresh it waited for", err, validate.Error{Reason: "unknown_key"})
					return
				}
				mu.Lock()
				maxLat, calls = max(maxLat, d), calls+1
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// A deferred refresh armed at the end fires when the limit opens.
	eventually(t, eventWait, func() bool { return !s.deferredArmed() && s.idle() })
	// At most one fetch per limit of the time the flood really took,
	// measured (a loaded machine stretches it beyond span), plus the
	// last deferred one.
	took := time.Since(start)
	got := f.hits.Load() - before
	if want := int64(took/limit) + 2; got > want || got < 2 {
		t.Errorf("fetches during a %v flood with limit %v = %d, want 2..%d", took, limit, got, want)
	}
	t.Logf("%d calls in %v, %d fetches, max latency %v", calls, took, got, maxLat)
}

// TestDeferredRefreshCancelledByAnyRefresh: a refresh that starts while a
// deferred one is armed satisfies it; Close disarms it. The armed timer is
// looked at, not waited for: the limit is longer than the test, so a timer
// left armed is still there (and a fired one would be a no-op on the
// pinned clock, which a count of fetches cannot tell from a cancelled one).
func TestDeferredRefreshCancelledByAnyRefresh(t *testing.T) {
	const limit = time.Minute
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	cfg := testConfig(t, f, clk)
	cfg.RefreshRateLimit = limit
	s := newSource(t, cfg)
	waitFirst(t, s)
	_, _ = s.Keys(t.Context(), "a") // on-demand fetch 2
	if _, err := s.Keys(t.Context(), "b"); !errors.Is(err, errRateLimited) {
		t.Fatalf("Keys(b) = %v, want %v", err, errRateLimited)
	}
	if !s.deferredArmed() {
		t.Fatal("no deferred refresh armed after a refused Keys")
	}
	clk.Advance(limit)
	_, _ = s.Keys(t.Context(), "c") // fetch 3 starts, cancels the deferred one
	if s.deferredArmed() {
		t.Error("deferred refresh still armed after another refresh started")
	}
	if got := f.hits.Load(); got != 3 {
		t.Errorf("fetches = %d, want 3", got)
	}
	_, _ = s.Keys(t.Context(), "d") // refused: arms again
	if !s.deferredArmed() {
		t.Fatal("no deferred refresh armed after a refused Keys")
	}
	_ = s.Close()
	if s.deferredArmed() {
		t.Error("deferred refresh still armed after Close")
	}
}

// deferredArmed reports whether a deferred refresh's timer is armed.
func (s *Source) deferredArmed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.deferred != nil
}

// TestOnDemandSuccessRestoresSchedule: after failed refreshes the loop
// retries with backoff; an on-demand refresh that succeeds puts it back on
// RefreshInterval, so it does not fetch again at its backoff time.
func TestOnDemandSuccessRestoresSchedule(t *testing.T) {
	const limit = 400 * time.Millisecond // backoff: 400 ms, capped at 30 s
	k1 := ecJWK(t, "k1")
	f := newFake(t, k1)
	f.setStatus(503, "")
	cfg := testConfig(t, f, newClock())
	cfg.RefreshRateLimit = limit
	s := newSource(t, cfg)
	waitFirst(t, s) // fetch 1 failed; the loop retries in 400 ms
	f.setKeys(t, k1)
	if err := s.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh = %v", err)
	}
	if got := f.hits.Load(); got != 2 {
		t.Fatalf("fetches after Refresh = %d, want 2", got)
	}
	time.Sleep(3 * limit)
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches %v after a successful on-demand refresh = %d, want 2 (the loop kept its failure backoff)", 3*limit, got)
	}
}

// TestRefreshAfterStalePeriodicRefresh: a signature failure whose Refresh
// joins a periodic refresh that read the set before the re-key asks once
// more, so the new material is served when Refresh returns.
func TestRefreshAfterStalePeriodicRefresh(t *testing.T) {
	old, rekeyed := ecJWK(t, "k1"), ecJWK(t, "k1")
	f := newFake(t, old)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered) // the loop's first refresh reads the old set and waits
	s := newSource(t, testConfig(t, f, newClock()))
	<-entered
	f.setKeys(t, rekeyed)
	f.setGate(nil, nil)
	done := make(chan error, 1)
	go func() { done <- s.Refresh(context.Background()) }()
	waitJoined(t, s, 1) // Refresh has joined the running periodic refresh
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("Refresh = %v", err)
	}
	ks, err := s.Keys(t.Context(), "k1")
	if err != nil || len(ks) != 1 || !ks[0].Valid() {
		t.Fatalf("Keys(k1) = %v, %v", ks, err)
	}
	if ks[0].Key.(*ecdsa.PublicKey).Equal(old.Key) {
		t.Errorf("Refresh returned with the stale key still served (fetches %d)", f.hits.Load())
	}
}

// TestRefreshWaitBoundAcrossAttempts: a hanging periodic refresh costs a
// Refresh caller its WaitTimeout, not the fetch: Refresh returns
// errWaitTimeout while the refresh still hangs (its FetchTimeout is an
// hour; a Refresh that waited for it would end with its context).
func TestRefreshWaitBoundAcrossAttempts(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered) // the first (periodic) refresh hangs
	defer close(gate)
	cfg := testConfig(t, f, newClock())
	cfg.WaitTimeout = 200 * time.Millisecond
	cfg.FetchTimeout = time.Hour
	s := newSource(t, cfg)
	<-entered
	ctx := eventCtx(t)
	if err := s.Refresh(ctx); !errors.Is(err, errWaitTimeout) || ctx.Err() != nil {
		t.Fatalf("Refresh = %v, want %v", err, errWaitTimeout)
	}
	if s.idle() {
		t.Error("the hanging refresh ended before Refresh returned: Refresh may have waited for it")
	}
}

// waitJoined waits until the running flight has been joined n times.
func waitJoined(t *testing.T, s *Source, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		joined := -1
		if s.running != nil {
			joined = s.running.joined
		}
		s.mu.Unlock()
		if joined >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("running flight joined %d times, want %d", joined, n)
		}
	}
}
