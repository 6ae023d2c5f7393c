package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPublicTransparent: with public operations configured, a request
// without a token gets the answer the server gives (issue 24, item 2):
// 404 -32601 for a method 2026-07-28 does not define (before any 401),
// and resources/subscribe, completion/complete and subscriptions/listen
// are public through the public resources and prompts they name.
func TestPublicTransparent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) {
		c.Operations.Public = testPublic
		if c.Operations.Methods == nil {
			c.Operations.Methods = map[string][]string{}
		}
		c.Operations.Methods["acme/report"] = []string{"reports"}
	})
	h := f.m.Handler(principalProbe())
	req := func(rev, method, params string, hdr ...string) *http.Request {
		modern := rev != legacyRev
		if modern {
			params = strings.TrimPrefix(params+`,"_meta":{"io.modelcontextprotocol/protocolVersion":"`+rev+`"}`, ",")
		}
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+params+`}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("MCP-Protocol-Version", rev)
		if modern {
			r.Header.Set("Mcp-Method", method)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	const notFound = `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`
	anon := "anonymous:" + anonymousID
	for _, c := range []struct {
		name   string
		r      *http.Request
		status int
		body   string
	}{
		{"2026-07-28 unknown method", req(modernRev, "unknown/method", ""), 404, notFound},
		{"2026-07-28 removed resources/subscribe", req(modernRev, "resources/subscribe", `"uri":"file:///secret"`), 404, notFound},
		{"2026-07-28 removed logging/setLevel", req(modernRev, "logging/setLevel", `"level":"info"`), 404, notFound},
		{"2026-07-28 removed tasks/result", req(modernRev, "tasks/result", `"taskId":"t1"`), 404, notFound},
		{"2026-07-28 removed tasks/list", req(modernRev, "tasks/list", ""), 404, notFound},
		{"2026-07-28 known method keeps its 401", req(modernRev, "tools/list", ""), 401, bodyUnauthorized},
		{"2026-07-28 method the policy names keeps its 401", req(modernRev, "acme/report", ""), 401, bodyUnauthorized},
		{"2025-11-25 unknown method keeps its 401", req(legacyRev, "unknown/method", ""), 401, bodyUnauthorized},
		{"later revision unknown method keeps its 401", req("2027-01-01", "unknown/method", ""), 401, bodyUnauthorized},
		{"subscribe to a public resource", req(legacyRev, "resources/subscribe", `"uri":"file:///public/readme"`), 200, anon},
		{"subscribe to another resource", req(legacyRev, "resources/subscribe", `"uri":"file:///secret"`), 401, bodyUnauthorized},
		{"complete a public prompt", req(modernRev, "completion/complete", `"ref":{"type":"ref/prompt","name":"intro"},"argument":{"name":"a","value":"b"}`), 200, anon},
		{"complete another prompt", req(modernRev, "completion/complete", `"ref":{"type":"ref/prompt","name":"secret_prompt"},"argument":{"name":"a","value":"b"}`), 401, bodyUnauthorized},
		{"complete a resource template", req(modernRev, "completion/complete", `"ref":{"type":"ref/resource","uri":"file:///public/{x}"},"argument":{"name":"x","value":"b"}`), 401, bodyUnauthorized},
		{"listen for list changes", req(modernRev, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`), 200, anon},
		{"listen to public resources", req(modernRev, "subscriptions/listen", `"notifications":{"resourceSubscriptions":["file:///public/readme"]}`), 200, anon},
		{"listen to another resource", req(modernRev, "subscriptions/listen", `"notifications":{"resourceSubscriptions":["file:///public/readme","file:///secret"]}`), 401, bodyUnauthorized},
		{"listen with a malformed list", req(modernRev, "subscriptions/listen", `"notifications":{"resourceSubscriptions":[1]}`), 401, bodyUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, c.r)
			if w.Code != c.status || probed(w.Body.String()) != c.body {
				t.Errorf("%d %s, want %d %s", w.Code, w.Body, c.status, c.body)
			}
			if c.status == 404 && w.Header().Get("WWW-Authenticate") != "" {
				t.Errorf("404 with a challenge: %q", w.Header().Get("WWW-Authenticate"))
			}
		})
	}
}

// TestPublicNamedMethodScopes: a method with scopes of its own in
// OperationPolicy.Methods is not made public by the names it reaches.
func TestPublicNamedMethodScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) {
		c.Operations.Public = testPublic
		c.Operations.Methods = map[string][]string{"resources/subscribe": {"subs"}, "completion/complete": {"comp"}, "subscriptions/listen": {"listen"}}
	})
	h := f.m.Handler(principalProbe())
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///public/readme"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"intro"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}`,
	} {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", body, w.Code, w.Body)
		}
	}
}
