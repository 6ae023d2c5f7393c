package mcpgo_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/mcpgo"
)

// TestSessionSharedAcrossTenants: alice of tenant-a creates an mcp-go
// session; bob of tenant-b presents its ID with his own valid token on
// POST (tools/call), GET (the stream) and DELETE, and is refused with 404
// before mcp-go sees the request; alice's session still works.
func TestSessionSharedAcrossTenants(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{})
	alice := f.token(t, "alice", "tenant-a", "mcp")
	bob := f.token(t, "bob", "tenant-b", "mcp")
	sid := f.initialize(t, alice)
	if sid == "" {
		t.Fatal("no session ID")
	}
	if w := f.whoami(t, "whoami", alice, sid); w.Subject != "alice" {
		t.Fatalf("alice: %+v", w)
	}
	// Alice's own stream opens.
	if r := f.do(t, http.MethodGet, "", alice, sid); r.status != http.StatusOK || !r.stream {
		t.Fatalf("alice's GET: %d stream=%v %s", r.status, r.stream, r.body)
	}
	aliceOtherTenant := f.token(t, "alice", "tenant-b", "mcp")
	for _, c := range []struct{ name, method, body, token string }{
		{"POST tools/call", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, bob},
		{"POST other tenant", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, aliceOtherTenant},
		{"POST response", http.MethodPost, `{"jsonrpc":"2.0","id":7,"result":{"x":1}}`, bob},
		{"GET stream", http.MethodGet, "", bob},
		{"DELETE", http.MethodDelete, "", bob},
		{"anonymous public tool", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello","arguments":{}}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, c.method, c.body, c.token, sid)
			if r.status != http.StatusNotFound || r.stream || strings.Contains(r.body, "alice") {
				t.Errorf("status %d stream=%v body %q, want 404 without data", r.status, r.stream, r.body)
			}
		})
	}
	if w := f.whoami(t, "whoami", alice, sid); w.Subject != "alice" || w.Tenant != "tenant-a" {
		t.Errorf("alice after bob's attempts: %+v", w)
	}
	if r := f.do(t, http.MethodDelete, "", alice, sid); r.status != http.StatusOK {
		t.Errorf("alice's DELETE: %d %s", r.status, r.body)
	}
	if r := f.call(t, "whoami", alice, sid); r.status != http.StatusNotFound {
		t.Errorf("call after DELETE: %d, want 404", r.status)
	}
	if r := f.call(t, "whoami", alice, "mcpguard-made-up"); r.status != http.StatusNotFound {
		t.Errorf("made-up session: %d, want 404", r.status)
	}
}

// TestPrincipalPerRequest: both modes; the handler's context carries the
// principal of its own request, including a wider token mid-session.
func TestPrincipalPerRequest(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureConfig{stateless: stateless})
			narrow := f.token(t, "carol", "tenant-c", "mcp")
			wide := f.token(t, "carol", "tenant-c", "mcp", "secret:read")
			sid := f.initialize(t, narrow)
			if (sid == "") != stateless {
				t.Fatalf("session ID %q, stateless %v", sid, stateless)
			}
			if w := f.whoami(t, "whoami", narrow, sid); !slices.Equal(w.Scopes, []string{"mcp"}) || w.Subject != "carol" {
				t.Fatalf("narrow: %+v", w)
			}
			if w := f.whoami(t, "secret", wide, sid); !slices.Equal(w.Scopes, []string{"mcp", "secret:read"}) || w.Tenant != "tenant-c" {
				t.Errorf("wide token mid-session: %+v", w)
			}
			if r := f.call(t, "secret", narrow, sid); r.status != http.StatusForbidden {
				t.Errorf("secret with the narrow token: %d", r.status)
			}
			dave := f.token(t, "dave", "tenant-d", "mcp")
			if w := f.whoami(t, "whoami", dave, f.initialize(t, dave)); w.Subject != "dave" || w.Tenant != "tenant-d" {
				t.Errorf("dave: %+v", w)
			}
			if w := f.whoami(t, "hello", "", f.initialize(t, "")); !w.Anonymous || w.Subject != "" {
				t.Errorf("anonymous hello: %+v", w)
			}
		})
	}
}

// TestStateless: no session IDs, so a client's is unknown to the
// middleware (404); GET and DELETE are 405.
func TestStateless(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{stateless: true})
	tok := f.token(t, "erin", "tenant-e", "mcp")
	if w := f.whoami(t, "whoami", tok, ""); w.Subject != "erin" {
		t.Errorf("erin: %+v", w)
	}
	if r := f.call(t, "whoami", tok, "mcp-session-made-up"); r.status != http.StatusNotFound {
		t.Errorf("with a stray session header: %d, want 404", r.status)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := f.do(t, m, "", tok, ""); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
			t.Errorf("%s: %d Allow %q, want 405 POST", m, r.status, r.header.Get("Allow"))
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := mcpgo.New(mcpgo.Config{}); !errors.Is(err, mcpgo.ErrConfig) {
		t.Errorf("no Middleware: %v", err)
	}
}

// TestCompletionNeedsThePromptScopes: behind the adapter, mcp-go (which
// decodes with encoding/json, case-insensitively) completes a protected
// prompt's arguments only for a token with that prompt's scopes, and a
// case-variant "Name" cannot make it complete another prompt than the one
// the middleware authorized.
func TestCompletionNeedsThePromptScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{stateless: true})
	base, admin := f.token(t, "u", "t", "mcp"), f.token(t, "u", "t", "mcp", "admin")
	for _, tc := range []struct {
		name, ref, token string
		status           int
		challenge, value string
	}{
		{"protected prompt, base scopes", `{"type":"ref/prompt","name":"admin_prompt"}`, base, 403, `scope="mcp admin"`, ""},
		{"protected prompt, its scope", `{"type":"ref/prompt","name":"admin_prompt"}`, admin, 200, "", "prompt:admin_prompt"},
		{"other prompt", `{"type":"ref/prompt","name":"greeting"}`, base, 200, "", "prompt:greeting"},
		{"case-variant Name after name", `{"type":"ref/prompt","name":"greeting","Name":"admin_prompt"}`, base, 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":` + tc.ref + `,"argument":{"name":"a","value":""}}}`
			r := f.do(t, http.MethodPost, body, tc.token, "")
			if r.status != tc.status || !strings.Contains(r.header.Get("WWW-Authenticate"), tc.challenge) {
				t.Fatalf("%d %q %s, want %d with %q", r.status, r.header.Get("WWW-Authenticate"), r.body, tc.status, tc.challenge)
			}
			if tc.value != "" && !strings.Contains(r.body, `"values":["`+tc.value+`"]`) {
				t.Errorf("result %s, want the value %q", r.body, tc.value)
			}
		})
	}
}
