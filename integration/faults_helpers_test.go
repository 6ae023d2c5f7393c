package integration

// The fault tests' environment, fault table and concurrent-batch helpers
// (see faults_test.go).

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// Key-source timings of the fault tests: short, so that recovery and
// timeouts happen within the test's time budget.
const (
	hxFaultRateLimit = 200 * time.Millisecond // jwks.Config.RefreshRateLimit (and the failure backoff)
	hxFaultWait      = time.Second            // jwks.Config.WaitTimeout
	hxFaultFetch     = 1500 * time.Millisecond
	hxFaultMaxBytes  = 64 << 10
	// hxFastBound is the latency bound, beyond a baseline measured in the
	// same batch, of a request that must not wait for the authorization
	// server (TestFaultsAtStart).
	hxFastBound = time.Second
	// hxNoWait is the WaitTimeout of the tests whose requests must not
	// wait at all (hxFaultEnvNoWait): longer than the client's Timeout
	// (20 s) and the batch context (30 s), so a request that waited for
	// it gets no answer and fails the test, whatever the load, while one
	// that did not is never mistaken for it; checkFast bounds any other
	// wait against a baseline.
	hxNoWait = 2 * hxEventWait
	// hxSlack absorbs scheduling delay under -race on two shared cores
	// (CI runs two test packages at once) in TestFaultFloodRandomKids's
	// bound, beside its baseline. A request that may wait for a running
	// refresh is not timed: TestFaultHang shows that it gives up after
	// WaitTimeout without a clock.
	hxSlack = 2500 * time.Millisecond
	// hxEventWait bounds a wait for something the system under test does
	// by itself (a refresh ending, a loop recovering): generous, so that
	// only a bug, never a loaded machine, exhausts it.
	hxEventWait = 30 * time.Second
	// maxRetryBackoff is validate/jwks's cap on the background loop's
	// retry delay after failed refreshes.
	maxRetryBackoff = 30 * time.Second
)

func hxFaultEnv(t *testing.T, before func(iss *authtest.Issuer)) *hxEnv {
	t.Helper()
	return hxFaultEnvWait(t, before, hxFaultWait)
}

// hxFaultEnvNoWait is hxFaultEnv with WaitTimeout hxNoWait.
func hxFaultEnvNoWait(t *testing.T) *hxEnv {
	t.Helper()
	return hxFaultEnvWait(t, nil, hxNoWait)
}

func hxFaultEnvWait(t *testing.T, before func(iss *authtest.Issuer), wait time.Duration) *hxEnv {
	t.Helper()
	return newHxEnv(t, hxEnvConfig{
		JWKS: jwks.Config{
			RefreshRateLimit: hxFaultRateLimit,
			WaitTimeout:      wait,
			FetchTimeout:     hxFaultFetch,
			MaxBytes:         hxFaultMaxBytes,
		},
		BeforeStart: before,
	})
}

// hxFaultCases are the faults of a JWKS endpoint that answers (or resets)
// promptly, with the error the key source must record for each (wrapped
// by Health.LastError) and its Health.Cause.
var hxFaultCases = []hxFaultCase{
	{"unavailable", fetch.ErrStatus, "http_status"},
	{"server-error", fetch.ErrStatus, "http_status"},
	{"too-many-requests", fetch.ErrStatus, "http_status"},
	{"not-found", fetch.ErrStatus, "not_found"},
	{"garbage", nil, "invalid_set"},
	{"empty", nil, "invalid_set"},
	{"empty-key-set", nil, "no_usable_keys"},
	{"huge", fetch.ErrTooLarge, "invalid_set"},
	{"refuse", fetch.ErrTransport, "connect"},
	{"wrong-content-type", fetch.ErrContentType, "invalid_set"},
}

type hxFaultCase struct {
	fault     authtest.Fault
	wantErr   error      // nil: any
	wantCause jwks.Cause // "": any
}

// recorded reports whether h records this fault as its last refresh error.
func (tc hxFaultCase) recorded(h jwks.Health) bool {
	return h.LastError != nil && (tc.wantErr == nil || errors.Is(h.LastError, tc.wantErr)) &&
		(tc.wantCause == "" || h.Cause == tc.wantCause)
}

// hxResult is one request's outcome in a concurrent batch.
type hxResult struct {
	resp hxResp
	err  error
}

// hxBatch sends reqs concurrently, released together, and returns the
// answers in order.
func (e *hxEnv) batch(t *testing.T, reqs []hxReq) []hxResult {
	t.Helper()
	ctx := hxContext(t, 30*time.Second)
	out := make([]hxResult, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			<-start
			out[i].resp, out[i].err = e.try(ctx, reqs[i])
		})
	}
	close(start)
	wg.Wait()
	return out
}

// slowest returns the largest latency of a batch whose answers are not
// checked (a baseline); a request that got no answer fails t.
func slowest(t *testing.T, res []hxResult) time.Duration {
	t.Helper()
	var worst time.Duration
	for i, r := range res {
		if r.err != nil {
			t.Errorf("baseline #%d: %v", i, r.err)
			continue
		}
		worst = max(worst, r.resp.latency)
	}
	return worst
}

// checkBatch checks that every answer is want and within bound (0: any
// latency), and returns the largest latency.
func checkBatch(t *testing.T, what string, res []hxResult, want hxWant, bound time.Duration) time.Duration {
	t.Helper()
	var worst time.Duration
	bad := 0
	for i, r := range res {
		if r.err != nil {
			t.Errorf("%s #%d: %v", what, i, r.err)
			continue
		}
		worst = max(worst, r.resp.latency)
		if d := want.diff(r.resp); d != "" {
			if bad++; bad <= 3 {
				t.Errorf("%s #%d: %s", what, i, d)
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d answers wrong", what, bad, len(res))
	}
	if bound > 0 && worst > bound {
		t.Errorf("%s: slowest answer took %v, want <= %v", what, worst, bound)
	}
	return worst
}

// checkFast sends reqs together with as many requests refused before key
// selection (typ "JWT", 401), which never look at the key source, and
// checks that every one of reqs gets want within hxFastBound beyond 3
// times the slowest of those baselines (TestFaultsAtStart's bound): CPU
// queueing on a loaded machine delays both alike. With hxNoWait a request
// that waited for WaitTimeout gets no answer at all; this bounds any
// other wait. It returns the largest latency of reqs.
func (e *hxEnv) checkFast(t *testing.T, what string, reqs []hxReq, want hxWant) time.Duration {
	t.Helper()
	n := len(reqs)
	all := append(slices.Clone(reqs), make([]hxReq, n)...)
	for i := range n {
		all[n+i] = hxReq{authz: hxBearer(e.tok(t, authtest.Token{Typ: "JWT"}))}
	}
	res := e.batch(t, all)
	baseline := slowest(t, res[n:])
	checkBatch(t, what+": baseline (refused before key selection)", res[n:], e.wantInvalidToken(), 0)
	return checkBatch(t, what, res[:n], want, hxFastBound+3*baseline)
}

// fetchSnap is a snapshot of the key source's refresh attempts, those of
// them that ended on their own FetchTimeout, and the issuer's JWKS
// requests.
type fetchSnap struct{ stats, timedOut, issuer int64 }

func (e *hxEnv) fetchSnap() fetchSnap {
	return fetchSnap{stats: e.refreshes.started.Load(), timedOut: e.refreshes.timedOut.Load(), issuer: e.iss.Requests(e.iss.JWKSURL)}
}

// hxRefreshes is the key source's jwks.Config.Observer in the fault
// tests: it counts the refreshes that started, those that ended, and those
// that ended on a timeout.
type hxRefreshes struct{ started, ended, timedOut atomic.Int64 }

func (r *hxRefreshes) RefreshStart(ctx context.Context, _ jwks.RefreshStart) context.Context {
	r.started.Add(1)
	return ctx
}

func (r *hxRefreshes) RefreshEnd(_ context.Context, e jwks.RefreshEnd) {
	if e.Cause == "timeout" {
		r.timedOut.Add(1)
	}
	r.ended.Add(1)
}

// settleRefreshes waits until no refresh of the key source is running, up
// to its FetchTimeout plus slack. A request that gave up waiting
// (WaitTimeout) leaves its refresh running in the background: its fetch
// may not have reached the issuer yet, so counting before it ended
// compares a started attempt with a request still on its way (under load,
// "JWKS requests at the issuer = 31 for 32 refreshes").
func (e *hxEnv) settleRefreshes(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(e.jwksCfg.FetchTimeout + hxEventWait)
	for e.refreshes.ended.Load() != e.refreshes.started.Load() {
		if time.Now().After(deadline) {
			t.Errorf("a key-source refresh still running %v after the last request", e.jwksCfg.FetchTimeout+hxEventWait)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkFetches asserts that exactly want refresh attempts were made since
// s, once every refresh has ended. The issuer must have seen exactly as
// many requests, except under FaultRefuse: net/http retries a replayable
// GET once when a reused connection is reset, so it may see up to twice as
// many; and, where no fault is injected, a refresh that ended on its own
// FetchTimeout (CPU starvation under -race) may have ended before its
// request was sent.
func (e *hxEnv) checkFetches(t *testing.T, what string, s fetchSnap, want int64, f authtest.Fault) {
	t.Helper()
	e.settleRefreshes(t)
	now := e.fetchSnap()
	got, wire := now.stats-s.stats, now.issuer-s.issuer
	if got != want {
		t.Errorf("%s: key source refreshes = %d, want %d", what, got, want)
	}
	least := got
	if f == "" {
		least -= now.timedOut - s.timedOut
	}
	if wire != got && (wire < least || wire > got) && (f != "refuse" || wire < got || wire > 2*got) {
		t.Errorf("%s: JWKS requests at the issuer = %d for %d refreshes (%d timed out)", what, wire, got, now.timedOut-s.timedOut)
	}
}
