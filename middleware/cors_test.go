package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/httptoken"
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
		{"preflight with Mcp-Param headers", f.m.Handler(next), func() *http.Request {
			r := preflight(app)
			r.Header.Set("Access-Control-Request-Headers", "content-type, mcp-method, mcp-name, mcp-param-region, Mcp-Param-Tenant_ID, mcp-param-, mcp-param-bad(name), x-other")
			return r
		}(), 204, map[string]string{
			"Access-Control-Allow-Headers": "Authorization, Content-Type, Accept, DPoP, Last-Event-ID, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Mcp-Param-Region, Mcp-Param-Tenant_id",
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

// FuzzParamHeaders: whatever a preflight asks for, the Allow-Headers
// suffix lists only canonical Mcp-Param-{token} names, at most
// corsMaxParams of them, each at most corsMaxParamLen bytes.
func FuzzParamHeaders(f *testing.F) {
	for _, s := range []string{"mcp-param-region", "content-type, mcp-param-a, MCP-PARAM-B", "mcp-param-", "mcp-param-a b", ",,,", "mcp-param-\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		out := paramHeaders([]string{line, line})
		if out == "" {
			return
		}
		names := strings.Split(strings.TrimPrefix(out, ", "), ", ")
		if len(names) > corsMaxParams {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "Mcp-Param-") || len(n) > corsMaxParamLen || !httptoken.Valid(n) || textproto.CanonicalMIMEHeaderKey(n) != n {
				t.Fatalf("allowed %q", n)
			}
		}
	})
}
