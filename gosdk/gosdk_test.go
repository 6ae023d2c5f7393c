package gosdk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/middleware"
)

// TestSessionSharedAcrossTenants: alice of tenant-a creates a stateful
// session; bob of tenant-b, with a valid token, presents its ID on POST
// (tools/call), GET (the stream) and DELETE. Each is refused with 404
// before the session is touched (by the middleware's binding), and
// alice's session keeps working.
func TestSessionSharedAcrossTenants(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{})
	alice := f.token(t, "alice", "tenant-a", "mcp")
	bob := f.token(t, "bob", "tenant-b", "mcp", "secret:read")
	sid := f.initialize(t, alice)
	if sid == "" {
		t.Fatal("no session ID")
	}
	if w := f.whoami(t, "whoami", alice, sid); w.CtxSubject != "alice" || w.ReqSubject != "alice" {
		t.Fatalf("alice's whoami = %+v", w)
	}
	// Same subject, other tenant or client: another principal as well.
	aliceB := f.token(t, "alice", "tenant-b", "mcp")

	for _, tc := range []struct {
		name, method, body, token string
	}{
		{"POST tools/call", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, bob},
		{"POST other tenant", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`, aliceB},
		{"POST notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, bob},
		{"GET stream", http.MethodGet, "", bob},
		{"DELETE", http.MethodDelete, "", bob},
		{"POST anonymous", http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.body, tc.token, sid)
			if r.status != http.StatusNotFound || r.body != sessionNotFound {
				t.Errorf("status %d, body %q; want 404 session not found", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") || strings.Contains(r.body, "alice") {
				t.Errorf("answer leaks the session: %s %q", ct, r.body)
			}
		})
	}
	if w := f.whoami(t, "whoami", alice, sid); w.CtxSubject != "alice" || w.CtxTenant != "tenant-a" {
		t.Errorf("alice's whoami after bob's attempts = %+v", w)
	}
	// Alice may end her own session.
	if r := f.do(t, http.MethodDelete, "", alice, sid); r.status != http.StatusNoContent {
		t.Errorf("alice's DELETE: %d %s", r.status, r.body)
	}
}

// sessionNotFound is the middleware's answer for a session that is not
// the principal's.
const sessionNotFound = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`

// TestEvictedSessionClosed: past its quota a principal's oldest session is
// evicted by the middleware and closed in the go-sdk (the internal DELETE
// carries a TokenInfo whose UserID is the owner's, which the go-sdk's own
// check accepts): with PassUnknown, the go-sdk itself answers 404 for it.
func TestEvictedSessionClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{sessions: middleware.SessionConfig{PerPrincipal: 1, PassUnknown: true}})
	alice := f.token(t, "alice", "tenant-a", "mcp")
	old := f.initialize(t, alice)
	cur := f.initialize(t, alice) // evicts old
	var r *response
	for i := 0; i < 1500; i++ { // the close runs in the background
		if r = f.call(t, "whoami", alice, old); r.status == http.StatusNotFound {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.status != http.StatusNotFound || r.body == sessionNotFound {
		t.Fatalf("evicted session: %d %q, want the go-sdk's own 404", r.status, r.body)
	}
	if w := f.whoami(t, "whoami", alice, cur); w.CtxSubject != "alice" {
		t.Errorf("current session: %+v", w)
	}
}

// TestPrincipalPerRequest: in both modes, each request's handler sees the
// principal of that request; mid-session, a new token of the same user
// with more scopes is what the handler sees.
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
				t.Fatalf("session ID %q in stateless=%v", sid, stateless)
			}
			w := f.whoami(t, "whoami", narrow, sid)
			if !slices.Equal(w.CtxScopes, []string{"mcp"}) || !slices.Equal(w.ReqScopes, []string{"mcp"}) {
				t.Fatalf("narrow token: %+v", w)
			}
			w = f.whoami(t, "secret", wide, sid)
			want := []string{"mcp", "secret:read"}
			if !slices.Equal(w.CtxScopes, want) || !slices.Equal(w.ReqScopes, want) || w.CtxSubject != "carol" || w.CtxTenant != "tenant-c" {
				t.Errorf("wide token in the same session: %+v, want scopes %q", w, want)
			}
			// Back to the narrow token: the secret tool is refused by the
			// middleware, whoami sees the narrow scopes again.
			if r := f.call(t, "secret", narrow, sid); r.status != http.StatusForbidden {
				t.Errorf("secret with the narrow token: %d", r.status)
			}
			if w := f.whoami(t, "whoami", narrow, sid); !slices.Equal(w.CtxScopes, []string{"mcp"}) {
				t.Errorf("narrow token again: %+v", w)
			}
			if w.UserID == "" || w.UserID == "anonymous" {
				t.Errorf("TokenInfo.UserID = %q", w.UserID)
			}
			// Another user, statelessly or in a session of their own.
			dave := f.token(t, "dave", "tenant-d", "mcp")
			if w := f.whoami(t, "whoami", dave, f.initialize(t, dave)); w.CtxSubject != "dave" || w.CtxTenant != "tenant-d" {
				t.Errorf("dave: %+v", w)
			}
		})
	}
}

// TestWithoutInstall: without Install, a handler's context carries no
// principal at all (never that of the session's first request), and
// gosdk.Principal still reads the request's.
func TestWithoutInstall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{noInstall: true})
	first := f.token(t, "erin", "tenant-e", "mcp")
	sid := f.initialize(t, first)
	w := f.whoami(t, "secret", f.token(t, "erin", "tenant-e", "mcp", "secret:read"), sid)
	if !w.CtxNone || w.ReqSubject != "erin" || !slices.Equal(w.ReqScopes, []string{"mcp", "secret:read"}) {
		t.Errorf("whoami without Install = %+v, want no context principal and the request's", w)
	}
}

// TestPublicOperations: without a token, only the public operations are
// served, to the anonymous principal; a token sent is validated; an
// anonymous session is bound to the anonymous principal.
func TestPublicOperations(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureConfig{stateless: stateless})
			sid := f.initialize(t, "") // initialize is public
			w := f.whoami(t, "hello", "", sid)
			if !w.CtxAnon || !w.ReqAnon || w.CtxSubject != "" || w.UserID != "anonymous" {
				t.Errorf("hello without a token = %+v, want the anonymous principal", w)
			}
			r := f.call(t, "whoami", "", sid)
			if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("whoami without a token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
			}
			if r := f.call(t, "hello", "not-a-token", sid); r.status != http.StatusUnauthorized {
				t.Errorf("hello with a bad token: %d, want 401", r.status)
			}
			if stateless {
				if r := f.do(t, http.MethodGet, "", "", sid); r.status != http.StatusUnauthorized {
					t.Errorf("GET without a token or session: %d, want 401", r.status)
				}
				return
			}
			// The anonymous session's stream and DELETE need no token.
			if r := f.do(t, http.MethodGet, "", "", sid); r.status != http.StatusOK {
				t.Errorf("GET of the anonymous session without a token: %d, want 200", r.status)
			}
			// The anonymous session is not alice's to take over.
			alice := f.token(t, "alice", "tenant-a", "mcp")
			if r := f.call(t, "hello", alice, sid); r.status != http.StatusNotFound {
				t.Errorf("alice on the anonymous session: %d, want 404", r.status)
			}
		})
	}
}

// TestLists: with a real go-sdk server (stateless and JSON, stateful and
// SSE) behind the adapter, tools/list, prompts/list, resources/list and
// resources/templates/list answer, in each mode of middleware.Config.Lists,
// what the middleware's answer layer shows: annotate lists everything with its
// scopes in _meta.securitySchemes (noauth for the public tool), hide only
// what the principal may call, off everything without annotation.
func TestLists(t *testing.T) {
	t.Parallel()
	// list returns "name=scheme[scopes]" for each entry, sorted.
	list := func(t *testing.T, f *fixture, method, token, sid, field, key string) []string {
		t.Helper()
		hdr := []string{"MCP-Protocol-Version", legacyRev}
		r := f.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"`+method+`"}`, token, sid, hdr...)
		var res map[string]json.RawMessage
		if r.status != http.StatusOK || json.Unmarshal(r.rpc.Result, &res) != nil {
			t.Fatalf("%s: %d %s", method, r.status, r.body)
		}
		if string(res["cacheScope"]) != `"private"` {
			t.Errorf("%s: cacheScope %s", method, res["cacheScope"])
		}
		var items []struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
			Tmpl string `json:"uriTemplate"`
			Meta struct {
				Schemes []struct {
					Type   string   `json:"type"`
					Scopes []string `json:"scopes"`
				} `json:"securitySchemes"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(res[field], &items); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var names []string
		for _, it := range items {
			n := map[string]string{"name": it.Name, "uri": it.URI, "uriTemplate": it.Tmpl}[key]
			for _, s := range it.Meta.Schemes {
				n += "=" + s.Type + fmt.Sprint(s.Scopes)
			}
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	}
	type want struct{ tools, prompts, resrcs, tmpls []string }
	annotated := want{
		[]string{"hello=noauth[]", "secret=oauth2[mcp secret:read]", "whoami=oauth2[mcp]"},
		[]string{"admin_prompt=oauth2[mcp admin]", "greeting=oauth2[mcp]"},
		[]string{"file:///admin=oauth2[mcp admin]", "file:///readme=oauth2[mcp]"},
		[]string{"file:///vault/{name}=oauth2[mcp admin]", "file:///{name}=oauth2[mcp]"},
	}
	for _, tc := range []struct {
		mode  middleware.ListMode
		name  string
		token func(*fixture) string
		want  want
	}{
		{middleware.ListAnnotate, "anonymous", func(*fixture) string { return "" }, annotated},
		{middleware.ListAnnotate, "base", func(f *fixture) string { return f.token(t, "u", "t", "mcp") }, annotated},
		{middleware.ListHide, "anonymous", func(*fixture) string { return "" }, want{[]string{"hello=noauth[]"}, nil, nil, nil}},
		{middleware.ListHide, "base", func(f *fixture) string { return f.token(t, "u", "t", "mcp") }, want{
			[]string{"hello=noauth[]", "whoami=oauth2[mcp]"}, []string{"greeting=oauth2[mcp]"},
			[]string{"file:///readme=oauth2[mcp]"}, []string{"file:///{name}=oauth2[mcp]"},
		}},
		{middleware.ListHide, "no base scope", func(f *fixture) string { return f.token(t, "u", "t", "other") }, want{[]string{"hello=noauth[]"}, nil, nil, nil}},
		{middleware.ListHide, "secret", func(f *fixture) string { return f.token(t, "u", "t", "mcp", "secret:read") }, want{
			[]string{"hello=noauth[]", "secret=oauth2[mcp secret:read]", "whoami=oauth2[mcp]"}, []string{"greeting=oauth2[mcp]"},
			[]string{"file:///readme=oauth2[mcp]"}, []string{"file:///{name}=oauth2[mcp]"},
		}},
		{middleware.ListHide, "admin", func(f *fixture) string { return f.token(t, "u", "t", "mcp", "admin") }, want{
			[]string{"hello=noauth[]", "whoami=oauth2[mcp]"}, []string{"admin_prompt=oauth2[mcp admin]", "greeting=oauth2[mcp]"},
			[]string{"file:///admin=oauth2[mcp admin]", "file:///readme=oauth2[mcp]"}, annotated.tmpls,
		}},
		{middleware.ListOff, "anonymous", func(*fixture) string { return "" }, want{
			[]string{"hello", "secret", "whoami"}, []string{"admin_prompt", "greeting"},
			[]string{"file:///admin", "file:///readme"}, []string{"file:///vault/{name}", "file:///{name}"},
		}},
	} {
		for _, stateless := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%s/stateless=%t", tc.mode, tc.name, stateless), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, fixtureConfig{stateless: stateless, lists: tc.mode})
				token := tc.token(f)
				sid := ""
				if !stateless {
					sid = f.initialize(t, token)
					if sid == "" {
						t.Fatal("no session")
					}
				}
				for _, l := range []struct {
					method, field, key string
					want               []string
				}{
					{"tools/list", "tools", "name", tc.want.tools},
					{"prompts/list", "prompts", "name", tc.want.prompts},
					{"resources/list", "resources", "uri", tc.want.resrcs},
					{"resources/templates/list", "resourceTemplates", "uriTemplate", tc.want.tmpls},
				} {
					if got := list(t, f, l.method, token, sid, l.field, l.key); !slices.Equal(got, l.want) {
						t.Errorf("%s = %q, want %q", l.method, got, l.want)
					}
				}
			})
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := gosdk.New(gosdk.Config{}); !errors.Is(err, gosdk.ErrConfig) {
		t.Errorf("New without Middleware: %v, want ErrConfig", err)
	}
}

func TestPrincipalOutsideAdapter(t *testing.T) {
	if p, ok := gosdk.Principal(nil); ok || p != nil {
		t.Error("Principal(nil) found a principal")
	}
	if _, ok := gosdk.Principal(&mcp.CallToolRequest{}); ok {
		t.Error("Principal of a request without Extra found a principal")
	}
	if _, ok := gosdk.Principal(&mcp.CallToolRequest{Extra: &mcp.RequestExtra{}}); ok {
		t.Error("Principal of a request without TokenInfo found a principal")
	}
}

// TestStatelessSessionIDs: a stateless handler issues no session IDs, so
// one sent by a client is unknown to the middleware (404, whoever sends
// it); without one GET and DELETE are the go-sdk's 405.
func TestStatelessSessionIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{stateless: true})
	alice := f.token(t, "alice", "tenant-a", "mcp")
	bob := f.token(t, "bob", "tenant-b", "mcp")
	if sid := f.initialize(t, alice); sid != "" {
		t.Fatalf("stateless handler issued session %q", sid)
	}
	if w := f.whoami(t, "whoami", bob, ""); w.CtxSubject != "bob" || w.CtxTenant != "tenant-b" {
		t.Errorf("bob: %+v", w)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if m == http.MethodPost {
			body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
		}
		if r := f.do(t, m, body, bob, "made-up-session"); r.status != http.StatusNotFound || r.body != sessionNotFound {
			t.Errorf("%s with a made-up session: %d %q, want 404", m, r.status, r.body)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := f.do(t, m, "", bob, ""); r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, r.status)
		}
	}
}

// TestCompletionNeedsThePromptScopes: with the go-sdk server, a
// completion/complete of a protected prompt needs what prompts/get of it
// needs (403 with those scopes before the SDK runs), while another
// prompt's completion and a resource template's need only the base
// scopes here; the request that is let through reaches the SDK's
// completion handler unchanged.
func TestCompletionNeedsThePromptScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureConfig{stateless: true})
	complete := func(ref, token string) *response {
		body := `{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":` + ref + `,"argument":{"name":"a","value":""}}}`
		return f.do(t, http.MethodPost, body, token, "", "MCP-Protocol-Version", legacyRev)
	}
	base, admin := f.token(t, "u", "t", "mcp"), f.token(t, "u", "t", "mcp", "admin")
	for _, tc := range []struct {
		name, ref, token string
		status           int
		challenge, value string
	}{
		{"protected prompt, base scopes", `{"type":"ref/prompt","name":"admin_prompt"}`, base, 403, `scope="mcp admin"`, ""},
		{"protected prompt, its scope", `{"type":"ref/prompt","name":"admin_prompt"}`, admin, 200, "", "ref/prompt:admin_prompt"},
		{"other prompt", `{"type":"ref/prompt","name":"greeting"}`, base, 200, "", "ref/prompt:greeting"},
		{"resource template", `{"type":"ref/resource","uri":"file:///{name}"}`, base, 200, "", "ref/resource:file:///{name}"},
		{"case-variant name", `{"type":"ref/prompt","name":"greeting","Name":"admin_prompt"}`, base, 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := complete(tc.ref, tc.token)
			if r.status != tc.status || !strings.Contains(r.header.Get("WWW-Authenticate"), tc.challenge) {
				t.Fatalf("%d %q %s, want %d with %q", r.status, r.header.Get("WWW-Authenticate"), r.body, tc.status, tc.challenge)
			}
			if tc.value != "" && !strings.Contains(string(r.rpc.Result), `"values":["`+tc.value+`"]`) {
				t.Errorf("result %s, want the value %q", r.rpc.Result, tc.value)
			}
		})
	}
}
