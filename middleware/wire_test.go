package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/challenge"
)

// TestEveryRefusalForAuthorizationChallenges: RFC 6750 §3 requires a
// WWW-Authenticate on every refusal for missing or insufficient
// authorization: every 401, every 403 except the Origin refusal (which is
// not about authorization), and the 400 invalid_request answers. Each is a
// Bearer challenge with at least one auth-param.
func TestEveryRefusalForAuthorizationChallenges(t *testing.T) {
	for _, realm := range []string{"", "mcp"} {
		m := newFake(t, fakeValidator{claims: fakeClaims()}, func(c *Config) { c.Realm = realm })
		for k, a := range m.answers {
			needs := a.status == http.StatusUnauthorized || a.status == http.StatusForbidden && kind(k) != kindOrigin
			if kind(k) == kindInsufficientScope {
				continue // rendered per operation (operation.challenge)
			}
			if !needs {
				continue
			}
			cs, err := challenge.ParseAll([]string{a.challenge})
			if err != nil || len(cs) != 1 || cs[0].Scheme != "Bearer" || cs[0].Err() != nil {
				t.Errorf("realm %q kind %d (%d): WWW-Authenticate %q is not a Bearer challenge with parameters", realm, k, a.status, a.challenge)
			}
		}
		if a := m.answers[kindOrigin]; a.challenge != "" {
			t.Errorf("Origin refusal carries %q", a.challenge)
		}
	}
}

// TestMissingMetaVersion: a 2026-07-28 request whose _meta lacks the
// protocol version, or that has no _meta, is 400 with JSON-RPC -32602
// (MCP 2026-07-28 basic/index.mdx §_meta), echoing the id. Before issue
// #11 it was -32020.
func TestMissingMetaVersion(t *testing.T) {
	f := newFixture(t, nil)
	tok := f.token(t, "mcp", "tools:read")
	for _, tc := range []struct{ name, body, want string }{
		{"no _meta", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params"}}`},
		{"no params", `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Invalid params"}}`},
		{"_meta without version", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{}}}}`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(tc.body))
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("MCP-Protocol-Version", modernRev)
			r.Header.Set("Mcp-Method", "tools/list")
			rec := httptest.NewRecorder()
			f.m.Handler(echoHandler()).ServeHTTP(rec, r)
			if rec.Code != http.StatusBadRequest || rec.Body.String() != tc.want {
				t.Errorf("got %d %s, want 400 %s", rec.Code, rec.Body, tc.want)
			}
		})
	}
}
