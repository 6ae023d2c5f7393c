package authtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// faultResult is what a client observed for one request.
type faultResult struct {
	err         error
	status      int
	contentType string
	retryAfter  string
	body        []byte
}

// doGet fetches u and reads at most limit bytes of the body.
func doGet(ctx context.Context, c *http.Client, u string, limit int64) faultResult {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		return faultResult{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return faultResult{err: err, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		retryAfter: resp.Header.Get("Retry-After"), body: body}
}

// handlerStacks counts goroutines running a fault handler.
func handlerStacks() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "authtest.(*Issuer).serveFault")
}

// waitNoHandlers fails unless every fault handler has returned within about 30 s.
func waitNoHandlers(t *testing.T) {
	t.Helper()
	for range 3000 {
		if handlerStacks() == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d fault handler goroutines still running", handlerStacks())
}

// TestFaults is not parallel: it checks that no fault handler goroutine
// outlives its request.
func TestFaults(t *testing.T) {
	jsonOK := func(r faultResult) bool { return json.Valid(r.body) }
	tests := []struct {
		fault      authtest.Fault
		wantErr    bool
		wantStatus int
		check      func(faultResult) bool
	}{
		{"unavailable", false, 503, func(r faultResult) bool { return r.retryAfter == "" }},
		{"too-many-requests", false, 429, func(r faultResult) bool { return r.retryAfter == "2" }},
		{"server-error", false, 500, nil},
		{"hang", true, 0, func(r faultResult) bool { return errors.Is(r.err, context.Canceled) }},
		{"garbage", false, 200, func(r faultResult) bool { return !jsonOK(r) && r.contentType == "application/json" }},
		{"empty", false, 200, func(r faultResult) bool { return len(r.body) == 0 }},
		{"empty-key-set", false, 200, func(r faultResult) bool { return string(r.body) == `{"keys":[]}` }},
		{"huge", false, 200, func(r faultResult) bool { return len(r.body) == 1<<20 }},
		{"refuse", true, 0, nil},
		{"not-found", false, 404, nil},
		{"wrong-content-type", false, 200, func(r faultResult) bool {
			return strings.HasPrefix(r.contentType, "text/html") && strings.Contains(string(r.body), `"kid":"es256-1"`)
		}},
	}
	for _, tls := range []bool{false, true} {
		iss := authtest.NewIssuer(t, authtest.IssuerConfig{TLS: tls, RetryAfter: 1500 * time.Millisecond})
		for _, tt := range tests {
			t.Run(string(tt.fault)+map[bool]string{false: "/http", true: "/https"}[tls], func(t *testing.T) {
				iss.SetFault(tt.fault, iss.JWKSURL)
				defer iss.SetFault("", iss.JWKSURL)
				before := iss.Requests(iss.JWKSURL)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if tt.fault == "hang" {
					// Give up once the server holds the request.
					go func() {
						for iss.Requests(iss.JWKSURL) == before && ctx.Err() == nil {
							time.Sleep(time.Millisecond)
						}
						time.Sleep(20 * time.Millisecond)
						cancel()
					}()
				}
				r := doGet(ctx, iss.Client, iss.JWKSURL, 1<<20)
				if gotErr := r.err != nil; gotErr != tt.wantErr {
					t.Fatalf("error = %v, want error %v", r.err, tt.wantErr)
				}
				if r.status != tt.wantStatus {
					t.Errorf("status = %d, want %d", r.status, tt.wantStatus)
				}
				if tt.check != nil && !tt.check(r) {
					t.Errorf("unexpected result: status %d, content-type %q, retry-after %q, %d body bytes, err %v",
						r.status, r.contentType, r.retryAfter, len(r.body), r.err)
				}
				if iss.Requests(iss.JWKSURL) <= before {
					t.Errorf("Requests(JWKSURL) did not grow")
				}
				waitNoHandlers(t)
				// The metadata is not faulted by SetFault.
				if st, _ := getJSON(t, iss.Client, iss.MetadataURLs[0]); st != http.StatusOK {
					t.Errorf("metadata status %d while JWKS faulted, want 200", st)
				}
			})
		}
		// FaultNone restores the endpoint.
		fetchJWKS(t, iss)
	}
}

func TestHugeBodyIsValidJSON(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{HugeBodyBytes: 100_000})
	iss.SetFault("huge", iss.JWKSURL)
	r := doGet(t.Context(), iss.Client, iss.JWKSURL, 1<<30)
	if r.err != nil || len(r.body) != 100_000 || !json.Valid(r.body) {
		t.Errorf("got %d bytes (valid JSON %v), err %v; want 100000 bytes of JSON", len(r.body), json.Valid(r.body), r.err)
	}
}

// TestCleanupUnblocksHang is not parallel: it counts handler goroutines.
// The issuer's cleanup (registered by NewIssuer) releases held requests:
// a "hang", which never ends by itself, and a "huge" body of 1 TiB, which
// would take hours, each for a client with no deadline that never stops
// reading. So the cleanup can only return by releasing the request, and
// the client sees the request cut: no bound on the elapsed real time,
// which a loaded machine stretches. A cleanup that did not release it
// would block forever; a watchdog, generous for a loaded machine, says so
// instead of the test binary's timeout.
func TestCleanupUnblocksHang(t *testing.T) {
	const hugeBytes = 1 << 40
	for _, f := range []authtest.Fault{"hang", "huge"} {
		t.Run(string(f), func(t *testing.T) {
			type drained struct {
				n   int64
				err error
			}
			done := make(chan drained, 1)
			var watchdog *time.Timer
			t.Run("issuer", func(t *testing.T) {
				iss := authtest.NewIssuer(t, authtest.IssuerConfig{HugeBodyBytes: hugeBytes})
				t.Cleanup(func() { // runs just before the issuer's
					watchdog = time.AfterFunc(2*time.Minute, func() {
						panic("authtest: the issuer's cleanup still blocked 2 minutes on a " + string(f) + " request")
					})
				})
				iss.SetFault(f, iss.JWKSURL)
				go func() {
					// A client with no deadline that never stops reading
					// (and keeps nothing of what it reads).
					resp, err := iss.Client.Get(iss.JWKSURL)
					if err != nil {
						done <- drained{err: err}
						return
					}
					defer resp.Body.Close()
					n, err := io.Copy(io.Discard, resp.Body)
					done <- drained{n, err}
				}()
				for n := 0; handlerStacks() == 0; n++ {
					if n == 2000 {
						t.Fatal("the request never reached the fault handler")
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			watchdog.Stop()
			if n := handlerStacks(); n != 0 {
				t.Errorf("%d fault handlers still running after the cleanup", n)
			}
			select {
			case r := <-done:
				// hang: the connection closed without an answer; huge: the
				// body cut short.
				if (f == "hang" && r.err == nil) || (f == "huge" && r.n >= hugeBytes) {
					t.Errorf("client read %d bytes, err %v; want the request cut by the cleanup", r.n, r.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("client request still blocked after the cleanup")
			}
		})
	}
}

func TestFaultTargets(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/t"})
	urls := iss.MetadataURLs
	iss.SetFault("server-error", urls[0])
	iss.SetFault("unavailable", pathOf(t, urls[2]))
	for n, want := range []int{500, 200, 503} {
		if st, _ := getJSON(t, iss.Client, urls[n]); st != want {
			t.Errorf("GET %s: status %d, want %d", urls[n], st, want)
		}
	}
	iss.SetFault("not-found", iss.MetadataURLs...)
	for _, u := range urls {
		if st, _ := getJSON(t, iss.Client, u); st != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", u, st)
		}
	}
	if st, _ := getJSON(t, iss.Client, iss.JWKSURL); st != http.StatusOK {
		t.Errorf("JWKS status %d, want 200", st)
	}
	iss.SetFault("", iss.MetadataURLs...)
	if st, _ := getJSON(t, iss.Client, urls[0]); st != http.StatusOK {
		t.Errorf("after fault \"\": status %d, want 200", st)
	}
	if got := iss.Requests(iss.MetadataURLs...); got != 7 {
		t.Errorf("Requests(MetadataURLs...) = %d, want 7", got)
	}
	for _, f := range []authtest.Fault{"no-such-fault", "inactive"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetFault(%q, JWKS) did not panic", f)
				}
			}()
			iss.SetFault(f, iss.JWKSURL)
		}()
	}
}
