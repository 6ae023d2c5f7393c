package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

func getReadyz(t *testing.T, ep endpoints) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + ep.Listen + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadyz: /readyz answers 200 with the embedded server (static keys)
// and, with -issuer, once the issuer's key set is loaded (start-up waited
// for it).
func TestReadyz(t *testing.T) {
	ep, _, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "error"}, noEnv)
	if code, body := getReadyz(t, ep); code != http.StatusOK || body != `{"status":"ready","issuers":[]}`+"\n" {
		t.Errorf("dev /readyz = %d %q", code, body)
	}
	_ = stop()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Now: time.Now})
	ep, _, _ = startRun(t, []string{"-addr", "127.0.0.1:0", "-issuer", iss.URL, "-resource", "http://127.0.0.1:1/mcp", "-log-level", "error"}, noEnv)
	if code, body := getReadyz(t, ep); code != http.StatusOK || !strings.HasPrefix(body, `{"status":"ready","issuers":[{"issuer":"`+iss.URL+`","ready":true,"keys":`) {
		t.Errorf("external /readyz = %d %q", code, body)
	}
}

// TestRunFailsFast: a wrong -issuer stops start-up within -wait-keys with
// the issuer and the cause; -wait-keys 0 starts anyway and /readyz says
// not ready. The error says a deadline ended the wait (run's context has
// none); how long it took is compared with a baseline from the same run,
// never with the wall clock alone: the worst of sleepers of -wait-keys run
// alongside, which a loaded machine delays alike. It may take 6 s more
// than that, or 3 times it, whichever is larger (the default -wait-keys,
// 10 s, is more than either for an unloaded machine).
func TestRunFailsFast(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	const waitKeys = 2 * time.Second
	const sleepers = 4
	base := make(chan time.Duration, sleepers)
	for range sleepers {
		go func() {
			start := time.Now()
			time.Sleep(waitKeys)
			base <- time.Since(start)
		}()
	}
	start := time.Now()
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-issuer", notFound.URL, "-wait-keys", waitKeys.String(), "-log-level", "error"}, noEnv, io.Discard, nil)
	el := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `jwks: no key set loaded: issuer "`+notFound.URL+`": not_found:`) {
		t.Errorf("run = %v, want the WaitReady error naming the issuer and not_found", err)
	}
	var b time.Duration
	for range sleepers {
		b = max(b, <-base)
	}
	t.Logf("run failed after %v (-wait-keys %v; its baseline %v)", el, waitKeys, b)
	if el > max(b+6*time.Second, 3*b) {
		t.Errorf("run took %v to fail, want about -wait-keys %v (baseline %v)", el, waitKeys, b)
	}
	ep, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-issuer", notFound.URL, "-wait-keys", "0", "-log-level", "error"}, noEnv)
	if code, body := getReadyz(t, ep); code != http.StatusServiceUnavailable || !strings.Contains(body, `"ready":false`) {
		t.Errorf("/readyz without keys = %d %q", code, body)
	}
}
