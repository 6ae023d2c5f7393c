package mcpguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const healthResource = "http://127.0.0.1:1/mcp"

// TestWaitForKeysReady: with WaitForKeys, New returns once the key set
// is loaded, and the probe answers 200 with the issuer's state.
func TestWaitForKeysReady(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	g, err := New(Config{
		Resource: healthResource, Issuers: []string{iss.URL}, WaitForKeys: 5 * time.Second,
		Validate: validate.Config{Now: iss.Now}, JWKS: jwks.Config{Now: iss.Now},
	})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	defer g.Close()
	h := g.Health()
	if len(h) != 1 || !h[0].Ready || h[0].Keys == 0 || h[0].Issuer != iss.URL || h[0].LastError != nil ||
		!h[0].LastSuccess.Equal(iss.Now()) || h[0].NextRefresh.IsZero() && h[0].LastAttempt.IsZero() {
		t.Errorf("Health = %+v", h)
	}
	rec := httptest.NewRecorder()
	g.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	want := `{"status":"ready","issuers":[{"issuer":"` + iss.URL + `","ready":true,"keys":` + itoa(h[0].Keys) +
		`,"last_success":"` + iss.Now().UTC().Format(time.RFC3339) + `"`
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), want) ||
		rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("probe = %d %s %v, want 200 starting %s", rec.Code, rec.Body, rec.Header(), want)
	}
	rec = httptest.NewRecorder()
	g.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST probe = %d %v", rec.Code, rec.Header())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// dnsFailure is a transport whose every dial fails to resolve.
func dnsFailure() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}}}
}

// TestWaitForKeysFailFast: a misconfigured issuer stops New with an error
// naming the issuer and the cause, and no goroutine left running.
func TestWaitForKeysFailFast(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close) // after the parallel subtests
	mixUp := authtest.NewIssuer(t, authtest.IssuerConfig{MixUpIssuer: "https://evil.example"})
	tlsIss := authtest.NewIssuer(t, authtest.IssuerConfig{TLS: true}) // a certificate the default client does not trust
	tests := []struct {
		name   string
		issuer string
		client *http.Client
		cause  jwks.Cause
	}{
		{"404", notFound.URL, nil, "not_found"},
		{"mix-up", mixUp.URL, nil, "issuer_mismatch"},
		{"tls", tlsIss.URL, nil, "tls"},
		{"dns", "https://auth.example.invalid", dnsFailure(), "dns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits the whole WaitForKeys
			// New waits all of WaitForKeys for an issuer that never
			// becomes ready; the error names the cause only if the first
			// fetch ended within it, which a loaded machine may delay
			// (a TLS handshake under -race). So the wait starts short and
			// doubles, a bounded number of times, only while no refresh
			// has finished yet: that outcome is the test's budget, not an
			// answer of the code under test, and any other is judged.
			var err error
			for wait := time.Second; ; wait *= 2 {
				var g *Guard
				g, err = New(Config{
					Resource: healthResource, Issuers: []string{tt.issuer}, WaitForKeys: wait,
					JWKS: jwks.Config{HTTPClient: tt.client},
				})
				if g != nil || !errors.Is(err, ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("New = %v, %v; want ErrNotReady", g, err)
				}
				if !strings.Contains(err.Error(), "no refresh finished yet") || wait >= 32*time.Second {
					break
				}
				t.Logf("WaitForKeys %v: %v; waiting longer", wait, err)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, `issuer "`+tt.issuer+`"`) || !strings.Contains(msg, ": "+string(tt.cause)+": ") {
				t.Errorf("error %q does not name the issuer and cause %q", msg, tt.cause)
			}
		})
	}
}

// TestReadyHandlerNotReady: a source without keys answers 503 with the
// cause code and no error text.
func TestReadyHandlerNotReady(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	src, err := jwks.New(jwks.Config{Issuer: notFound.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for deadline := time.Now().Add(10 * time.Second); src.Health().LastAttempt.IsZero(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no refresh ended within 10s")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := src.WaitReady(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "jwks: no key set loaded: ") {
		t.Fatalf("WaitReady = %v", err)
	}
	rec := httptest.NewRecorder()
	ReadyHandler(src).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusServiceUnavailable || !strings.HasPrefix(body, `{"status":"not_ready","issuers":[{"issuer":"`+notFound.URL+`","ready":false,"keys":0,"last_error":"not_found","consecutive_failures":`) ||
		// The status text must not leak; the issuer's random port may
		// contain "404" (http://127.0.0.1:40467 did).
		strings.Contains(strings.ReplaceAll(body, notFound.URL, ""), "404") || strings.Contains(body, "well-known") {
		t.Errorf("probe = %d %s", rec.Code, body)
	}
	rec = httptest.NewRecorder()
	ReadyHandler(src).ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.Len() != 0 {
		t.Errorf("HEAD probe = %d %q", rec.Code, rec.Body)
	}
	// Static keys are always ready.
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	g, err := New(Config{Resource: healthResource, Issuers: []string{iss.URL}, WaitForKeys: time.Second,
		Keys: map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := g.Health(); len(h) != 1 || !h[0].Ready {
		t.Errorf("static Health = %+v", h)
	}
	if _, err := New(Config{Resource: healthResource, Issuers: []string{iss.URL}, WaitForKeys: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("negative WaitForKeys: %v", err)
	}
}
