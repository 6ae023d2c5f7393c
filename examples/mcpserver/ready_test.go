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
// not ready.
func TestRunFailsFast(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	start := time.Now()
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-issuer", notFound.URL, "-wait-keys", "2s", "-log-level", "error"}, noEnv, io.Discard, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `jwks: no key set loaded: issuer "`+notFound.URL+`": not_found:`) {
		t.Errorf("run = %v, want the WaitReady error naming the issuer and not_found", err)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("run took %v to fail", el)
	}
	ep, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-issuer", notFound.URL, "-wait-keys", "0", "-log-level", "error"}, noEnv)
	if code, body := getReadyz(t, ep); code != http.StatusServiceUnavailable || !strings.Contains(body, `"ready":false`) {
		t.Errorf("/readyz without keys = %d %q", code, body)
	}
}
