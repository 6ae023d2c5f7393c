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

// waitNoHandlers fails unless every fault handler has returned within 5s.
func waitNoHandlers(t *testing.T) {
	t.Helper()
	for range 500 {
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
		{authtest.FaultUnavailable, false, 503, func(r faultResult) bool { return r.retryAfter == "" }},
		{authtest.FaultTooManyRequests, false, 429, func(r faultResult) bool { return r.retryAfter == "2" }},
		{authtest.FaultServerError, false, 500, nil},
		{authtest.FaultHang, true, 0, func(r faultResult) bool { return errors.Is(r.err, context.Canceled) }},
		{authtest.FaultGarbage, false, 200, func(r faultResult) bool { return !jsonOK(r) && r.contentType == "application/json" }},
		{authtest.FaultEmpty, false, 200, func(r faultResult) bool { return len(r.body) == 0 }},
		{authtest.FaultEmptyKeySet, false, 200, func(r faultResult) bool { return string(r.body) == `{"keys":[]}` }},
		{authtest.FaultHuge, false, 200, func(r faultResult) bool { return len(r.body) == 1<<20 }},
		{authtest.FaultRefuse, true, 0, nil},
		{authtest.FaultNotFound, false, 404, nil},
		{authtest.FaultWrongContentType, false, 200, func(r faultResult) bool {
			return strings.HasPrefix(r.contentType, "text/html") && strings.Contains(string(r.body), `"kid":"es256-1"`)
		}},
	}
	if got, want := len(authtest.Faults()), len(tests); got != want {
		t.Fatalf("Faults() has %d entries, the table %d", got, want)
	}
	for _, tls := range []bool{false, true} {
		iss := authtest.NewIssuer(t, authtest.IssuerConfig{TLS: tls, RetryAfter: 1500 * time.Millisecond})
		for n, tt := range tests {
			t.Run(tt.fault.String()+map[bool]string{false: "/http", true: "/https"}[tls], func(t *testing.T) {
				if tt.fault != authtest.Faults()[n] {
					t.Fatalf("Faults()[%d] = %s, want %s", n, authtest.Faults()[n], tt.fault)
				}
				iss.SetFault(tt.fault)
				defer iss.SetFault(authtest.FaultNone)
				before := iss.JWKSFetches()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if tt.fault == authtest.FaultHang {
					// Give up once the server holds the request.
					go func() {
						for iss.JWKSFetches() == before && ctx.Err() == nil {
							time.Sleep(time.Millisecond)
						}
						time.Sleep(20 * time.Millisecond)
						cancel()
					}()
				}
				r := doGet(ctx, iss.Client(), iss.JWKSURL(), 1<<20)
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
				if iss.JWKSFetches() <= before {
					t.Errorf("JWKSFetches() did not grow")
				}
				waitNoHandlers(t)
				// The metadata is not faulted by SetFault.
				if st, _ := getJSON(t, iss.Client(), iss.MetadataURLs()[0]); st != http.StatusOK {
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
	iss.SetFault(authtest.FaultHuge)
	r := doGet(t.Context(), iss.Client(), iss.JWKSURL(), 1<<30)
	if r.err != nil || len(r.body) != 100_000 || !json.Valid(r.body) {
		t.Errorf("got %d bytes (valid JSON %v), err %v; want 100000 bytes of JSON", len(r.body), json.Valid(r.body), r.err)
	}
}

// TestCloseUnblocksHang is not parallel: it counts handler goroutines.
func TestCloseUnblocksHang(t *testing.T) {
	for _, f := range []authtest.Fault{authtest.FaultHang, authtest.FaultHuge} {
		t.Run(f.String(), func(t *testing.T) {
			iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
			iss.SetFault(f)
			done := make(chan faultResult, 1)
			go func() {
				// A client with no deadline that never stops reading.
				done <- doGet(context.Background(), iss.Client(), iss.JWKSURL(), 1<<40)
			}()
			for n := 0; handlerStacks() == 0; n++ {
				if n == 2000 {
					t.Fatal("the request never reached the fault handler")
				}
				time.Sleep(5 * time.Millisecond)
			}
			closed := make(chan struct{})
			go func() { iss.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return")
			}
			if n := handlerStacks(); n != 0 {
				t.Errorf("%d fault handlers still running after Close", n)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("client request still blocked after Close")
			}
			iss.Close() // idempotent
		})
	}
}

func TestFaultTargets(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/t"})
	urls := iss.MetadataURLs()
	iss.SetFaultFor(urls[0], authtest.FaultServerError)
	iss.SetFaultFor(pathOf(t, urls[2]), authtest.FaultUnavailable)
	for n, want := range []int{500, 200, 503} {
		if st, _ := getJSON(t, iss.Client(), urls[n]); st != want {
			t.Errorf("GET %s: status %d, want %d", urls[n], st, want)
		}
	}
	iss.SetMetadataFault(authtest.FaultNotFound)
	for _, u := range urls {
		if st, _ := getJSON(t, iss.Client(), u); st != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", u, st)
		}
	}
	if st, _ := getJSON(t, iss.Client(), iss.JWKSURL()); st != http.StatusOK {
		t.Errorf("JWKS status %d, want 200", st)
	}
	iss.SetMetadataFault(authtest.FaultNone)
	if st, _ := getJSON(t, iss.Client(), urls[0]); st != http.StatusOK {
		t.Errorf("after FaultNone: status %d, want 200", st)
	}
	if got := iss.MetadataFetches(); got != 7 {
		t.Errorf("MetadataFetches() = %d, want 7", got)
	}
	if got := authtest.Fault(99).String(); got != "fault(99)" {
		t.Errorf("String() = %q", got)
	}
}
