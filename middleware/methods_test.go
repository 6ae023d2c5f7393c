package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// schemaMethods are the client-to-server request methods (ClientRequest)
// and notifications (ClientNotification) of the MCP schemas, read from
// modelcontextprotocol/modelcontextprotocol at b0f60ba (2026-08-22),
// schema/<rev>/schema.ts.
var schemaMethods = map[string][]string{
	"2025-11-25": {
		"ping", "initialize", "completion/complete", "logging/setLevel", "prompts/get", "prompts/list",
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
		"resources/unsubscribe", "tools/call", "tools/list", "tasks/get", "tasks/result", "tasks/list",
		"tasks/cancel",
		"notifications/cancelled", "notifications/progress", "notifications/initialized",
		"notifications/roots/list_changed", "notifications/tasks/status",
	},
	"2026-07-28": {
		"server/discover", "completion/complete", "prompts/get", "prompts/list", "resources/list",
		"resources/templates/list", "resources/read", "subscriptions/listen", "tools/call", "tools/list",
		"notifications/cancelled",
	},
}

// TestEveryMethodHasADefault: every method of both schemas has a row in
// methodDefaults (and so in docs/policy.md), and no row names a method
// neither schema defines.
func TestEveryMethodHasADefault(t *testing.T) {
	rows := map[string]bool{}
	for _, d := range methodDefaults {
		if rows[d.method] {
			t.Errorf("%s: two rows", d.method)
		}
		rows[d.method] = true
	}
	inSchema := map[string]bool{}
	for rev, ms := range schemaMethods {
		for _, m := range ms {
			inSchema[m] = true
			if !rows[m] {
				t.Errorf("%s method %s has no policy default", rev, m)
			}
		}
	}
	for m := range rows {
		if !inSchema[m] {
			t.Errorf("row %s is in neither schema", m)
		}
	}
}

// TestMethodDefaults drives the defaults through the Handler.
func TestMethodDefaults(t *testing.T) {
	body := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `}}`
	}
	tests := []struct {
		name   string
		deny   bool
		body   string
		scopes []string
		want   int
		header string // substring of WWW-Authenticate; "" for none expected
	}{
		// resources/subscribe needs what resources/read of the URI needs.
		{"subscribe protected, base only", false, body("resources/subscribe", `"uri":"file:///projects/secret/k"`), []string{"mcp"}, 403, `scope="mcp res:read files:secret"`},
		{"subscribe protected, read scopes", false, body("resources/subscribe", `"uri":"file:///projects/secret/k"`), []string{"mcp", "res:read", "files:secret"}, 200, ""},
		{"subscribe query variant", false, body("resources/subscribe", `"uri":"file:///projects/myapp/config.json?x"`), []string{"mcp", "res:read", "files:read"}, 403, `files:config`},
		{"subscribe unlisted URI", false, body("resources/subscribe", `"uri":"mem://x"`), []string{"mcp", "res:read"}, 200, ""},
		{"subscribe unlisted URI denied", true, body("resources/subscribe", `"uri":"mem://x"`), []string{"mcp", "res:read"}, 403, `Bearer resource_metadata=`},
		{"unsubscribe base", false, body("resources/unsubscribe", `"uri":"file:///projects/secret/k"`), []string{"mcp"}, 200, ""},
		// tasks/* need tools/call's method scopes.
		{"tasks/result base only", false, body("tasks/result", `"taskId":"t1"`), []string{"mcp"}, 403, `scope="mcp tools:call"`},
		{"tasks/result with tools:call", false, body("tasks/result", `"taskId":"t1"`), []string{"mcp", "tools:call"}, 200, ""},
		{"tasks/list with tools:call", false, body("tasks/list", ``), []string{"mcp", "tools:call"}, 200, ""},
		// completion/complete needs what prompts/get of its prompt needs,
		// or, for a resource template, what resources/read of the
		// resources it expands to needs.
		{"completion of a protected prompt, base only", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"secret_prompt"},"argument":{"name":"a","value":""}`), []string{"mcp"}, 403, `scope="mcp prompts:read prompts:secret"`},
		{"completion of a protected prompt, its scopes", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"secret_prompt"}`), []string{"mcp", "prompts:read", "prompts:secret"}, 200, ""},
		{"completion of a protected prompt, name first", false, body("completion/complete", `"ref":{"name":"secret_prompt","type":"ref/prompt"}`), []string{"mcp", "prompts:read"}, 403, `scope="mcp prompts:read prompts:secret"`},
		{"completion of an unlisted prompt", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"other"}`), []string{"mcp"}, 403, `scope="mcp prompts:read"`},
		{"completion of an unlisted prompt, prompts:read", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"other"}`), []string{"mcp", "prompts:read"}, 200, ""},
		{"completion of an unlisted prompt denied", true, body("completion/complete", `"ref":{"type":"ref/prompt","name":"other"}`), []string{"mcp", "prompts:read"}, 403, `Bearer resource_metadata=`},
		{"completion of a template, base only", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/{name}"}`), []string{"mcp"}, 403, `scope="mcp res:read files:read"`},
		{"completion of a template, res:read only", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/{name}"}`), []string{"mcp", "res:read"}, 403, `scope="mcp res:read files:read"`},
		{"completion of a template, its prefix rule's scopes", true, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/{name}"}`), []string{"mcp", "res:read", "files:read"}, 200, ""},
		{"completion of a template, longer prefix", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/secret/{name}"}`), []string{"mcp", "res:read", "files:read"}, 403, `files:secret`},
		{"completion of a query template, exact rule", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/myapp/config.json{?v}"}`), []string{"mcp", "res:read", "files:read"}, 403, `files:config`},
		{"completion of an unlisted template", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"mem://x/{y}"}`), []string{"mcp", "res:read"}, 200, ""},
		{"completion of an unlisted template denied", true, body("completion/complete", `"ref":{"type":"ref/resource","uri":"mem://x/{y}"}`), []string{"mcp", "res:read"}, 403, `Bearer resource_metadata=`},
		{"completion of a template without uri denied", true, body("completion/complete", `"ref":{"type":"ref/resource"}`), []string{"mcp", "res:read"}, 403, `Bearer resource_metadata=`},
		{"completion of a non-canonical template", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":"file:///projects/../{x}"}`), []string{"mcp", "res:read", "files:read"}, 400, ""},
		{"completion template uri not a string", false, body("completion/complete", `"ref":{"type":"ref/resource","uri":1}`), []string{"mcp", "res:read", "files:read"}, 400, ""},
		{"completion without ref", false, body("completion/complete", `"argument":{"name":"a","value":""}`), []string{"mcp"}, 200, ""},
		{"completion without ref denied", true, body("completion/complete", `"argument":{"name":"a","value":""}`), []string{"mcp"}, 403, `Bearer resource_metadata=`},
		{"completion with another ref type", false, body("completion/complete", `"ref":{"type":"ref/other","name":"secret_prompt"}`), []string{"mcp"}, 200, ""},
		{"completion ref type not a string", false, body("completion/complete", `"ref":{"type":1,"name":"secret_prompt"}`), []string{"mcp"}, 400, ""},
		{"completion ref name not a string", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":["secret_prompt"]}`), []string{"mcp"}, 400, ""},
		{"completion ref Name beside name", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"x","Name":"secret_prompt"}`), []string{"mcp", "prompts:read"}, 400, ""},
		{"completion ref name repeated", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"x","name":"secret_prompt"}`), []string{"mcp", "prompts:read"}, 400, ""},
		{"completion Ref beside ref", false, body("completion/complete", `"ref":{"type":"ref/prompt","name":"x"},"Ref":{"type":"ref/prompt","name":"secret_prompt"}`), []string{"mcp", "prompts:read"}, 400, ""},
		// Base-only methods.
		{"subscriptions/listen base", false, body("subscriptions/listen", `"notifications":{}`), []string{"mcp"}, 200, ""},
		{"ping base", true, body("ping", ``), []string{"mcp"}, 200, ""},
		{"initialize base", true, body("initialize", ``), []string{"mcp"}, 200, ""},
		// DenyUnlisted applies to unlisted methods too.
		{"unknown method allowed", false, body("x/secret", ``), []string{"mcp"}, 200, ""},
		{"unknown method denied", true, body("x/secret", ``), []string{"mcp"}, 403, `Bearer resource_metadata=`},
		{"unknown notification denied", true, `{"jsonrpc":"2.0","method":"notifications/x"}`, []string{"mcp"}, 403, `Bearer resource_metadata=`},
		{"listed method allowed under deny", true, body("tools/list", ``), []string{"mcp", "tools:read"}, 200, ""},
		{"response allowed under deny", true, `{"jsonrpc":"2.0","id":1,"result":{}}`, []string{"mcp"}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Operations.DenyUnlisted = tc.deny })
			r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(tc.body))
			r.Header.Set("Authorization", "Bearer "+f.token(t, tc.scopes...))
			r.Header.Set("MCP-Protocol-Version", legacyRev)
			rec := httptest.NewRecorder()
			f.m.Handler(echoHandler()).ServeHTTP(rec, r)
			h := rec.Header().Get("WWW-Authenticate")
			if rec.Code != tc.want || tc.header != "" && !strings.Contains(h, tc.header) {
				t.Errorf("got %d %q, want %d with %q", rec.Code, h, tc.want, tc.header)
			}
		})
	}
}
