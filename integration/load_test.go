package integration

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// hxLoadEnv is the environment variable that enables TestLoadMixed; its
// value is the run's duration (time.ParseDuration), e.g. "60s".
const hxLoadEnv = "MCPGUARD_LOAD"

// Bounds of the load test, whatever MCPGUARD_LOAD says.
const (
	hxLoadWorkers     = 8
	hxLoadMaxDuration = 30 * time.Minute
	hxLoadMaxRequests = 20_000_000
)

// hxLoadKind is one kind of request in the load mix.
type hxLoadKind int

const (
	hxLoadValid      hxLoadKind = iota // a valid token: 200
	hxLoadExpired                      // expired: 401 invalid_token
	hxLoadAudience                     // wrong audience: 401 invalid_token
	hxLoadSignature                    // known kid, wrong key: 401 invalid_token
	hxLoadUnknownKID                   // unknown kid: 401 invalid_token, no fetch
	hxLoadNoToken                      // no Authorization: 401 without error code
	hxLoadKinds
)

var hxLoadKindNames = [hxLoadKinds]string{"valid", "expired", "wrong_audience", "bad_signature", "unknown_kid", "no_token"}

// hxLoadMix is the traffic mix, one entry per request slot: half valid,
// the rest spread over the failure kinds.
var hxLoadMix = []hxLoadKind{
	hxLoadValid, hxLoadValid, hxLoadValid, hxLoadValid, hxLoadValid,
	hxLoadExpired, hxLoadAudience, hxLoadSignature, hxLoadUnknownKID, hxLoadUnknownKID, hxLoadNoToken,
}

// TestLoadMixed runs mixed valid, invalid and unknown-kid traffic from
// hxLoadWorkers workers against the example server over loopback HTTP for
// the duration in MCPGUARD_LOAD. Every answer must be the exact expected
// one; the goroutine count after the run must match the count before it,
// and the heap in use (after GC) at the end must stay within 2× (or
// +16 MiB) of the heap at a quarter of the run. It logs requests/s.
func TestLoadMixed(t *testing.T) {
	v := os.Getenv(hxLoadEnv)
	if v == "" {
		t.Skipf("load test disabled; run it with %s set to a duration, e.g. %s=60s go test -race -run Load ./integration/", hxLoadEnv, hxLoadEnv)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > hxLoadMaxDuration {
		t.Fatalf("%s=%q: want a duration in (0, %v]", hxLoadEnv, v, hxLoadMaxDuration)
	}

	// The key source runs on the issuer's pinned clock, so unknown kids
	// can cost at most one on-demand fetch in the whole run.
	e := newHxEnv(t, hxEnvConfig{})
	ctx := hxContext(t, d+time.Minute)

	// Token pools, minted up front. Failures are never cached by the
	// validator, so reusing them costs a full validation every time;
	// valid tokens are cached after their first use.
	const pool = 64
	var pools [hxLoadKinds][]string
	for range pool {
		pools[hxLoadValid] = append(pools[hxLoadValid], e.iss.Token(t, authtest.Token{}))
		pools[hxLoadExpired] = append(pools[hxLoadExpired], e.iss.Token(t, authtest.Expired()))
		pools[hxLoadAudience] = append(pools[hxLoadAudience], e.iss.Token(t, authtest.WrongAudience()))
		pools[hxLoadSignature] = append(pools[hxLoadSignature], e.iss.Token(t, authtest.Token{ForeignKey: true}))
		pools[hxLoadUnknownKID] = append(pools[hxLoadUnknownKID], e.iss.Token(t, authtest.Token{KID: "load-" + hxRandomHex(8)}))
	}
	wants := [hxLoadKinds]hxWant{
		hxLoadValid: e.wantOK(), hxLoadExpired: e.wantInvalidToken(), hxLoadAudience: e.wantInvalidToken(),
		hxLoadSignature: e.wantInvalidToken(), hxLoadUnknownKID: e.wantInvalidToken(), hxLoadNoToken: e.wantNoToken(),
	}
	request := func(k hxLoadKind, n int) hxReq {
		r := hxReq{tool: server.ToolWhoami}
		if k != hxLoadNoToken {
			r.authz = hxBearer(pools[k][n%pool])
		}
		return r
	}

	// Warm up every kind once (the first fetch, the one on-demand fetch,
	// connection setup), then take the baselines.
	e.iss.Advance(time.Minute)
	for k := range hxLoadKinds {
		wants[k].check(t, e.do(ctx, t, request(k, 0)))
	}
	if t.Failed() {
		t.FailNow()
	}
	fetchesBefore := e.iss.Requests(e.iss.JWKSURL)
	e.client.CloseIdleConnections()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	goroutinesBefore := runtime.NumGoroutine()

	var (
		total   atomic.Int64
		byKind  [hxLoadKinds]atomic.Int64
		wrong   atomic.Int64
		errMu   sync.Mutex
		samples []string
	)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range hxLoadWorkers {
		wg.Go(func() {
			for i := w; ; i += hxLoadWorkers {
				if time.Now().After(deadline) || total.Add(1) > hxLoadMaxRequests || ctx.Err() != nil {
					return
				}
				k := hxLoadMix[i%len(hxLoadMix)]
				byKind[k].Add(1)
				resp, err := e.try(ctx, request(k, i/len(hxLoadMix)))
				msg := ""
				switch {
				case err != nil:
					msg = err.Error()
				default:
					msg = wants[k].diff(resp)
				}
				if msg != "" {
					wrong.Add(1)
					errMu.Lock()
					if len(samples) < 5 {
						samples = append(samples, hxLoadKindNames[k]+": "+msg)
					}
					errMu.Unlock()
				}
			}
		})
	}

	// Heap at a quarter of the run, with the workers going.
	time.Sleep(d / 4)
	heapQuarter := hxHeapInuse()
	wg.Wait()
	elapsed := time.Since(start)
	heapEnd := hxHeapInuse()
	n := min(total.Load(), hxLoadMaxRequests)

	if w := wrong.Load(); w > 0 {
		t.Errorf("%d of %d answers were not the expected one; first ones:\n%s", w, n, fmt.Sprint(samples))
	}
	if limit := max(2*heapQuarter, heapQuarter+16<<20); heapEnd > limit {
		t.Errorf("HeapInuse after GC grew from %d KiB at 25%% to %d KiB at 100%%, want <= %d KiB", heapQuarter>>10, heapEnd>>10, limit>>10)
	}
	if f := e.iss.Requests(e.iss.JWKSURL) - fetchesBefore; f != 0 {
		t.Errorf("JWKS fetches during the run = %d, want 0 (unknown kids are rate-limited)", f)
	}
	e.client.CloseIdleConnections()
	hxSettleGoroutines(t, goroutinesBefore, 2)
	var mix []string
	for k := range hxLoadKinds {
		mix = append(mix, fmt.Sprintf("%s=%d", hxLoadKindNames[k], byKind[k].Load()))
	}
	t.Logf("%d requests in %v with %d workers: %.0f requests/s; mix %v; HeapInuse %d KiB at 25%%, %d KiB at 100%%; goroutines before %d, after %d",
		n, elapsed.Round(time.Millisecond), hxLoadWorkers, float64(n)/elapsed.Seconds(), mix,
		heapQuarter>>10, heapEnd>>10, goroutinesBefore, runtime.NumGoroutine())

	// The server is still healthy.
	e.wantOK().check(t, e.do(ctx, t, request(hxLoadValid, 1)))
	if r := e.do(ctx, t, hxReq{}); r.status != http.StatusUnauthorized {
		t.Errorf("no token after the run: status %d", r.status)
	}
}

// hxHeapInuse returns HeapInuse after a garbage collection.
func hxHeapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
