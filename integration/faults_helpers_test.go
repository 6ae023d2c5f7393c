package integration

// The fault tests' environment, fault table and concurrent-batch helpers
// (see faults_test.go).

import (
	"sync"
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
	// hxFastBound is the latency bound of a request that must not wait for
	// the authorization server.
	hxFastBound = time.Second
	// hxWaitBound is the latency bound of a request that may wait for a
	// running refresh: WaitTimeout plus slack for -race on two cores. The
	// requirement is "no request waits more than about 2 s".
	hxWaitBound = hxFaultWait + hxSlack
	// hxSlack absorbs scheduling delay under -race on two shared cores
	// (CI runs two test packages at once). Bounds stay far below what a
	// hanging authorization server would cause (FetchTimeout or forever).
	hxSlack = 2500 * time.Millisecond
)

func hxFaultEnv(t *testing.T, before func(iss *authtest.Issuer)) *hxEnv {
	t.Helper()
	return newHxEnv(t, hxEnvConfig{
		JWKS: jwks.Config{
			RefreshRateLimit: hxFaultRateLimit,
			WaitTimeout:      hxFaultWait,
			FetchTimeout:     hxFaultFetch,
			MaxBytes:         hxFaultMaxBytes,
		},
		BeforeStart: before,
	})
}

// hxFaultCases are the faults of a JWKS endpoint that answers (or resets)
// promptly, with the error the key source must record for each.
var hxFaultCases = []struct {
	fault   authtest.Fault
	wantErr error
}{
	{authtest.FaultUnavailable, fetch.ErrStatus},
	{authtest.FaultServerError, fetch.ErrStatus},
	{authtest.FaultTooManyRequests, fetch.ErrStatus},
	{authtest.FaultNotFound, fetch.ErrStatus},
	{authtest.FaultGarbage, jwks.ErrInvalidSet},
	{authtest.FaultEmpty, jwks.ErrInvalidSet},
	{authtest.FaultEmptyKeySet, jwks.ErrNoUsableKeys},
	{authtest.FaultHuge, fetch.ErrTooLarge},
	{authtest.FaultRefuse, fetch.ErrTransport},
	{authtest.FaultWrongContentType, fetch.ErrContentType},
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

// checkBatch checks that every answer is want and within bound, and
// returns the largest latency.
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
	if worst > bound {
		t.Errorf("%s: slowest answer took %v, want <= %v", what, worst, bound)
	}
	return worst
}

// fetchDelta reports the key source's refresh attempts and the issuer's
// JWKS requests since a previous snapshot.
type fetchSnap struct{ stats, issuer int64 }

func (e *hxEnv) fetchSnap() fetchSnap {
	return fetchSnap{stats: int64(e.keys.Stats().Fetches), issuer: e.iss.JWKSFetches()}
}

// checkFetches asserts that exactly want refresh attempts were made since
// s. The issuer must have seen exactly as many requests, except under
// FaultRefuse: net/http retries a replayable GET once when a reused
// connection is reset, so it may see up to twice as many.
func (e *hxEnv) checkFetches(t *testing.T, what string, s fetchSnap, want int64, f authtest.Fault) {
	t.Helper()
	now := e.fetchSnap()
	got, wire := now.stats-s.stats, now.issuer-s.issuer
	if got != want {
		t.Errorf("%s: key source refreshes = %d, want %d", what, got, want)
	}
	if wire != got && (f != authtest.FaultRefuse || wire < got || wire > 2*got) {
		t.Errorf("%s: JWKS requests at the issuer = %d for %d refreshes", what, wire, got)
	}
}
