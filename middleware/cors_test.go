package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCORS: a browser client of an allowed origin gets CORS answers: a
// preflight is 204 with the Streamable HTTP methods and request headers,
// before any token check and without a decision; the 401 that starts
// authorization exposes WWW-Authenticate. Another origin's preflight is
// the 403 of that origin, and "null" is never echoed, even with "*".
func TestCORS(t *testing.T) {
	const app = "http://localhost:6274"
	var decisions int
	f := newFixture(t, func(c *Config) {
		c.AllowedOrigins = []string{app}
		c.OnDecision = func(context.Context, Decision) { decisions++ }
	})
	star := newFixture(t, func(c *Config) { c.AllowedOrigins = []string{"*"} })
	preflight := func(origin string) *http.Request {
		r := httptest.NewRequest(http.MethodOptions, resource, nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
		return r
	}
	reached := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	for _, tc := range []struct {
		name   string
		h      http.Handler
		r      *http.Request
		status int
		want   map[string]string // exact values; "" means absent
	}{
		{"preflight, allowed origin", f.m.Handler(next), preflight(app), 204, map[string]string{
			"Access-Control-Allow-Origin":      app,
			"Access-Control-Allow-Methods":     "GET, POST, DELETE",
			"Access-Control-Allow-Headers":     "Authorization, Content-Type, Accept, DPoP, Last-Event-ID, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name",
			"Access-Control-Expose-Headers":    "WWW-Authenticate, Mcp-Session-Id, DPoP-Nonce, Retry-After",
			"Access-Control-Max-Age":           "600",
			"Vary":                             "Origin",
			"Access-Control-Allow-Credentials": "",
			"WWW-Authenticate":                 "",
		}},
		{"preflight through Protect", f.m.Protect()(next), preflight(app), 204, map[string]string{"Access-Control-Allow-Origin": app}},
		{"preflight, other origin", f.m.Handler(next), preflight("https://evil.example"), 403, map[string]string{"Access-Control-Allow-Origin": ""}},
		{"preflight, null origin with *", star.m.Handler(next), preflight("null"), 401, map[string]string{"Access-Control-Allow-Origin": ""}},
		{"preflight, any origin with *", star.m.Handler(next), preflight("https://app.example"), 204, map[string]string{"Access-Control-Allow-Origin": "https://app.example"}},
		{"401 of an allowed origin", f.m.Handler(next), func() *http.Request {
			r := rpcRequest(modernRev, "tools/list", "", "")
			r.Header.Set("Origin", app)
			return r
		}(), 401, map[string]string{
			"Access-Control-Allow-Origin":   app,
			"Access-Control-Expose-Headers": "WWW-Authenticate, Mcp-Session-Id, DPoP-Nonce, Retry-After",
			"WWW-Authenticate":              `Bearer scope="mcp", resource_metadata="` + metadataURL + `"`,
		}},
		{"no Origin, no CORS", f.m.Handler(next), rpcRequest(modernRev, "tools/list", "", ""), 401, map[string]string{"Access-Control-Allow-Origin": "", "Vary": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached, decisions = false, 0
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, tc.r)
			if rec.Code != tc.status || reached {
				t.Fatalf("status %d (next reached: %t), want %d", rec.Code, reached, tc.status)
			}
			for k, v := range tc.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tc.status == 204 && decisions != 0 {
				t.Errorf("a preflight reported %d decisions", decisions)
			}
		})
	}
}
