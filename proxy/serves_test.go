package proxy_test

import (
	"net/http/httptest"
	"testing"
)

// TestServes: Serves claims exactly the paths Proxy.ServeHTTP answers
// other than with its 404 (routes, metadata, JWK Set, health), for every
// method, so that a host server passes the rest to its own handlers.
func TestServes(t *testing.T) {
	e := newTestEnv(t, envOptions{})
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/mcp", true},
		{"GET", "/mcp", true},
		{"PUT", "/mcp", true},
		{"GET", "/.well-known/oauth-protected-resource/mcp", true},
		{"GET", "/.well-known/oauth-protected-resource", true},
		{"POST", "/.well-known/oauth-protected-resource/mcp", true},
		{"GET", "/.well-known/jwks.json", true},
		{"GET", "/healthz", true},
		{"GET", "/readyz", true},
		{"GET", "/", false},
		{"GET", "/index.html", false},
		{"POST", "/mcp/", false},
		{"GET", "/.well-known/oauth-authorization-server", false},
	} {
		r := httptest.NewRequest(tc.method, e.proxyURL+tc.path, nil)
		if got := e.px.Serves(r); got != tc.want {
			t.Errorf("Serves(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
		w := httptest.NewRecorder()
		e.px.ServeHTTP(w, r)
		if notFound := w.Code == 404 && w.Body.String() == `{"error":"not_found"}`+"\n"; notFound == tc.want {
			t.Errorf("%s %s: ServeHTTP answered %d %q, Serves %v", tc.method, tc.path, w.Code, w.Body.String(), tc.want)
		}
	}
}
