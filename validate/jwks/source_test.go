package jwks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
)

func TestRotationNeedsExactlyOneFetch(t *testing.T) {
	clk := newClock()
	k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
	f := newFake(t, k1)
	s := newSource(t, testConfig(t, f, clk))

	if ks, err := s.Keys(t.Context(), "k1"); err != nil || len(ks) != 1 || ks[0].KeyID != "k1" {
		t.Fatalf("Keys(k1) = %v, %v", ks, err)
	}
	if got := f.hits.Load(); got != 1 {
		t.Fatalf("fetches after start = %d, want 1", got)
	}

	f.setKeys(t, k1, k2) // the AS rotates in k2
	ks, err := s.Keys(t.Context(), "k2")
	if err != nil || len(ks) != 1 || ks[0].KeyID != "k2" || ks[0].Algorithm != "ES256" {
		t.Fatalf("Keys(k2) after rotation = %v, %v", ks, err)
	}
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches after rotation = %d, want 2 (exactly one more)", got)
	}
	for range 10 {
		if _, err := s.Keys(t.Context(), "k2"); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches after repeated hits = %d, want 2", got)
	}
	if st := s.stats(); st.Fetches != 2 || st.Failures != 0 || st.Keys != 2 || !st.LastSuccess.Equal(clk.Now()) {
		t.Errorf("stats = %+v", st)
	}
}

func TestRemovedKeyStopsWorking(t *testing.T) {
	t.Run("on-demand refresh", func(t *testing.T) {
		clk := newClock()
		k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
		f := newFake(t, k1, k2)
		s := newSource(t, testConfig(t, f, clk))
		waitFirst(t, s)

		f.setKeys(t, k2)
		if err := s.Refresh(t.Context()); err != nil {
			t.Fatalf("Refresh = %v", err)
		}
		if _, err := s.Keys(t.Context(), "k1"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
			t.Errorf("Keys(removed k1) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
		}
		if _, err := s.Keys(t.Context(), "k2"); err != nil {
			t.Errorf("Keys(k2) = %v", err)
		}
	})
	t.Run("periodic refresh", func(t *testing.T) {
		clk := newClock()
		k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
		f := newFake(t, k1, k2)
		cfg := testConfig(t, f, clk)
		cfg.RefreshInterval = 50 * time.Millisecond
		s := newSource(t, cfg)
		waitFirst(t, s)

		f.setKeys(t, k2)
		eventually(t, 30*time.Second, func() bool {
			_, err := s.Keys(t.Context(), "k1")
			return errors.Is(err, validate.Error{Reason: "unknown_key"})
		})
		if _, err := s.Keys(t.Context(), "k2"); err != nil {
			t.Errorf("Keys(k2) = %v", err)
		}
	})
}

func TestUnknownKidStorm(t *testing.T) {
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	f.setDelay(50 * time.Millisecond) // so that the storm overlaps the refresh
	cfg := testConfig(t, f, clk)
	s := newSource(t, cfg)
	waitFirst(t, s)

	storm := func() (maxLatency time.Duration) {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for i := range 1000 {
			wg.Go(func() {
				start := time.Now()
				_, err := s.Keys(context.Background(), fmt.Sprintf("random-%d", i))
				d := time.Since(start)
				if !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
					t.Errorf("Keys(random) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
				}
				mu.Lock()
				maxLatency = max(maxLatency, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		return maxLatency
	}

	lat := storm()
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches after first storm = %d, want 2 (start + one on-demand)", got)
	}
	lat2 := storm() // same rate-limit interval: no fetch at all
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches after second storm in the same interval = %d, want 2", got)
	}
	clk.Advance(cfg.RefreshRateLimit)
	lat3 := storm() // next interval: one more
	if got := f.hits.Load(); got != 3 {
		t.Errorf("fetches after storm in the next interval = %d, want 3", got)
	}
	t.Logf("max Keys latency per storm of 1000: %v, %v, %v (the refresh takes 50ms)", lat, lat2, lat3)
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Errorf("Keys(k1) after storms = %v", err)
	}
}

func TestHangingServer(t *testing.T) {
	// The bound proven: a request waits about WaitTimeout, never the
	// FetchTimeout of a minute. Each call is seen to return while the
	// hanging fetch is still running (the flight has not ended), so none
	// waited for it, however loaded the machine. Its latency is compared
	// with a baseline from the same batch, never with the wall clock
	// alone: the worst of plain sleeps of WaitTimeout run alongside, which
	// CPU queueing delays alike (within). A call may take margin more than
	// that, or factor times it, whichever is larger: a loaded machine
	// stretches the baseline and the calls together, so the bound grows
	// with the load instead of being a fixed margin it can exceed.
	const (
		margin = 2 * time.Second
		factor = 10
	)
	within := func(d, baseline time.Duration) bool { return d <= max(baseline+margin, factor*baseline) }
	t.Run("mid-run", func(t *testing.T) {
		clk := newClock()
		f := newFake(t, ecJWK(t, "k1"))
		cfg := testConfig(t, f, clk)
		cfg.WaitTimeout = 150 * time.Millisecond
		cfg.FetchTimeout = time.Minute
		s := newSource(t, cfg)
		waitFirst(t, s)
		f.setMode(modeHang)

		var (
			wg              sync.WaitGroup
			mu              sync.Mutex
			worst, baseline time.Duration
		)
		for i := range 50 {
			wg.Go(func() {
				if i%2 == 0 {
					clk.Advance(cfg.RefreshRateLimit) // let some of them try to start refreshes
				}
				start := time.Now()
				_, err := s.Keys(context.Background(), fmt.Sprintf("new-%d", i))
				d := time.Since(start)
				if !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
					t.Errorf("Keys(new) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
				}
				mu.Lock()
				worst = max(worst, d)
				mu.Unlock()
			})
			wg.Go(func() {
				d := sleepFor(cfg.WaitTimeout)
				mu.Lock()
				baseline = max(baseline, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		t.Logf("worst Keys latency against a hanging server: %v (WaitTimeout %v; its baseline %v)", worst, cfg.WaitTimeout, baseline)
		if !within(worst, baseline) {
			t.Errorf("worst latency %v > baseline %v + %v or x%d", worst, baseline, margin, factor)
		}
		if s.idle() {
			t.Fatal("the hanging refresh ended before every Keys call had returned: a call may have waited for it")
		}
		if got := f.hits.Load(); got != 2 {
			t.Errorf("fetches = %d, want 2 (one hanging refresh shared by all)", got)
		}
		// A known key never waits for the hanging refresh.
		if _, err := s.Keys(t.Context(), "k1"); err != nil || s.idle() {
			t.Errorf("Keys(k1) = %v (refresh ended: %t), want a hit without waiting for the hanging refresh", err, s.idle())
		}
		// Close aborts the hanging fetch rather than waiting for its
		// FetchTimeout: the refresh ends cancelled, not timed out.
		_ = s.Close()
		if h := s.Health(); !errors.Is(h.LastError, context.Canceled) || errors.Is(h.LastError, context.DeadlineExceeded) {
			t.Errorf("last error after Close = %v, want the fetch aborted (context.Canceled)", h.LastError)
		}
	})
	t.Run("from start", func(t *testing.T) {
		f := newFake(t)
		f.setMode(modeHang)
		cfg := testConfig(t, f, newClock())
		cfg.WaitTimeout = 150 * time.Millisecond
		cfg.FetchTimeout = time.Minute
		s := newSource(t, cfg)
		if s.idle() {
			t.Fatal("New returned after its first fetch ended: it must not block on the network")
		}
		// The baseline is the worst of several sleepers, so that one
		// lucky sleeper does not make it small.
		const sleepers = 8
		base := make(chan time.Duration, sleepers)
		for range sleepers {
			go func() { base <- sleepFor(cfg.WaitTimeout) }()
		}
		start := time.Now()
		_, err := s.Keys(t.Context(), "k1")
		d := time.Since(start)
		if !errors.Is(err, validate.ErrKeysUnavailable) || !errors.Is(err, errWaitTimeout) {
			t.Errorf("Keys = %v, want %v and %v", err, validate.ErrKeysUnavailable, errWaitTimeout)
		}
		var b time.Duration
		for range sleepers {
			b = max(b, <-base)
		}
		t.Logf("Keys against a hanging first fetch: %v (WaitTimeout %v; its baseline %v)", d, cfg.WaitTimeout, b)
		if !within(d, b) {
			t.Errorf("Keys took %v, want <= baseline %v + %v or x%d", d, b, margin, factor)
		}
		if s.idle() {
			t.Error("the hanging first fetch ended before Keys returned: Keys may have waited for it")
		}
	})
}

func TestCancelledRequestDoesNotAbortRefresh(t *testing.T) {
	clk := newClock()
	k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
	f := newFake(t, k1)
	s := newSource(t, testConfig(t, f, clk))
	waitFirst(t, s)

	f.setKeys(t, k1, k2)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-entered // the refresh this request started has reached the server
		cancel()
	}()
	if _, err := s.Keys(ctx, "k2"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Keys with cancelled ctx = %v, want %v and %v", err, validate.Error{Reason: "unknown_key"}, context.Canceled)
	}
	f.setGate(nil, nil)
	close(gate)
	// The refresh the request started finishes in the background.
	eventually(t, 30*time.Second, func() bool {
		_, err := s.Keys(context.Background(), "k2")
		return err == nil
	})
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2", got)
	}

	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	if _, err := s.Keys(done, "k3"); !errors.Is(err, context.Canceled) {
		t.Errorf("Keys with a done ctx = %v, want %v", err, context.Canceled)
	}
	clk.Advance(time.Hour)
	if got := f.hits.Load(); got != 2 {
		t.Errorf("a request with a done ctx started a fetch: %d", got)
	}
}

func TestRefreshRateLimit(t *testing.T) {
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	cfg := noWait(testConfig(t, f, clk))
	s := newSource(t, cfg)
	waitFirst(t, s)

	if err := s.Refresh(t.Context()); err != nil {
		t.Fatalf("first Refresh = %v", err)
	}
	// Refused at once: a wait (for the deferred refresh an hour away, or
	// WaitTimeout) would end with the context instead.
	ctx := eventCtx(t)
	if err := s.Refresh(ctx); !errors.Is(err, errRateLimited) || errors.Is(err, errWaitTimeout) || ctx.Err() != nil {
		t.Fatalf("second Refresh = %v, want %v at once", err, errRateLimited)
	}
	clk.Advance(cfg.RefreshRateLimit - time.Nanosecond)
	if err := s.Refresh(t.Context()); !errors.Is(err, errRateLimited) {
		t.Fatalf("Refresh just before the limit = %v, want %v", err, errRateLimited)
	}
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2", got)
	}

	// Concurrent calls in a new interval share one fetch: it is held
	// until all 20 have joined it, so none comes after it ended.
	clk.Advance(time.Nanosecond)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.setGate(gate, entered)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := s.Refresh(context.Background()); err != nil {
				t.Errorf("concurrent Refresh = %v", err)
			}
		})
	}
	<-entered
	f.setGate(nil, nil)
	waitJoined(t, s, 19)
	close(gate)
	wg.Wait()
	if got := f.hits.Load(); got != 3 {
		t.Errorf("fetches after concurrent Refresh = %d, want 3", got)
	}

	// A failing refresh reports its error and keeps the keys.
	clk.Advance(cfg.RefreshRateLimit)
	f.setStatus(500, "")
	if err := s.Refresh(t.Context()); err == nil {
		t.Errorf("Refresh against a 500 = nil, want an error")
	}
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Errorf("Keys(k1) after failed Refresh = %v", err)
	}
}

func TestKeysHitDoesNotAllocate(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	s := newSource(t, testConfig(t, f, newClock()))
	waitFirst(t, s)
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := s.Keys(ctx, "k1"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Keys hit allocates %v times, want 0", n)
	}
}

func TestReturnedSliceIsClipped(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"), ecJWK(t, "k2"))
	s := newSource(t, testConfig(t, f, newClock()))
	ks, err := s.Keys(t.Context(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	_ = append(ks, ecJWK(t, "evil"))
	if again, _ := s.Keys(t.Context(), "k1"); len(again) != 1 || cap(again) != 1 {
		t.Errorf("snapshot changed by a caller's append: %d keys, cap %d", len(again), cap(again))
	}
}

func BenchmarkKeysHit(b *testing.B) {
	s := &Source{}
	s.set.Store(&keySet{byKID: map[string][]jose.JSONWebKey{"k1": {{KeyID: "k1"}}}, n: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Keys(ctx, "k1"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMissRacingACompletedRefresh covers a request that missed on an old
// snapshot while a refresh replaced it: it must look again, not fetch.
func TestMissRacingACompletedRefresh(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	s := newSource(t, testConfig(t, f, newClock()))
	waitFirst(t, s)
	ks, err := s.keysSlow(t.Context(), "k1", nil) // it "saw" no set at all
	if err != nil || len(ks) != 1 {
		t.Fatalf("keysSlow = %v, %v", ks, err)
	}
	if got := f.hits.Load(); got != 1 {
		t.Errorf("fetches = %d, want 1", got)
	}
}

// sleepFor sleeps d and returns how long that took: a baseline for a wait
// of d on this machine now.
func sleepFor(d time.Duration) time.Duration {
	start := time.Now()
	time.Sleep(d)
	return time.Since(start)
}
