package middleware

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// listEntryCase is one entry of a list answer and the request that calls
// it.
type listEntryCase struct {
	list, name string
}

// callBody returns the JSON-RPC request a client sends to use e: the call
// of a tool, the get of a prompt, the read of a resource, the completion of
// a template (a template's expansions are not known, its completion
// follows the same rules).
func (e listEntryCase) callBody() string {
	switch e.list {
	case methodToolsList:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, e.name)
	case methodPromptsList:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":%q}}`, e.name)
	case methodResourcesList:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":%q}}`, e.name)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":%q},"argument":{"name":"x","value":""}}}`, e.name)
}

var listEntryCases = []listEntryCase{
	{methodToolsList, "get_weather"}, {methodToolsList, "delete_repo"}, {methodToolsList, "push"},
	{methodToolsList, "public_tool"}, {methodToolsList, "unlisted_tool"}, {methodToolsList, "pull"},
	{methodPromptsList, "secret_prompt"}, {methodPromptsList, "open_prompt"}, {methodPromptsList, "other"},
	{methodResourcesList, "file:///projects/myapp/config.json"}, {methodResourcesList, "file:///projects/a.txt"},
	{methodResourcesList, "file:///projects/secret/k"}, {methodResourcesList, "mem://x/y"},
	{methodResourcesList, "file:///projects/../secret/k"}, {methodResourcesList, "mem://public/readme"},
	{methodResourcesList, "file:///projects/myapp/config.json?x=1"},
	{methodTemplatesList, "file:///projects/{name}"}, {methodTemplatesList, "file:///projects/secret/{name}"},
	{methodTemplatesList, "file:///projects/myapp/config.json{?v}"}, {methodTemplatesList, "mem://x/{y}"},
	{methodTemplatesList, "file:///proj{x}"}, {methodTemplatesList, "{+uri}"}, {methodTemplatesList, "file:///projects/../{x}"},
	{methodTemplatesList, "file:///projects/secret"},
}

// listPolicies are the policy variants of the differential test.
var listPolicies = []struct {
	name   string
	mutate func(*Config)
}{
	{"scopes from policy", func(c *Config) { c.Metadata.ScopesSupported = nil }},
	{"deny unlisted", func(c *Config) { c.Metadata.ScopesSupported = nil; c.Operations.DenyUnlisted = true }},
	{"published subset", func(c *Config) {
		c.Metadata.ScopesSupported = []string{"mcp", "tools:call", "weather:read", "repo:write", "prompts:read", "res:read", "files:read"}
	}},
	{"hierarchy published", func(c *Config) { c.Metadata.ScopesSupported = []string{"mcp:all", "repo:admin", "files:read"} }},
	{"public and deny", func(c *Config) {
		c.Metadata.ScopesSupported = nil
		c.Operations.DenyUnlisted = true
		c.Operations.Public = PublicOperations{
			Methods:   []string{"initialize"},
			Tools:     []string{"public_tool"},
			Prompts:   []string{"open_prompt"},
			Resources: []string{"mem://public/readme"},
		}
	}},
}

// listTokens are the scope sets tried; nil is no token at all.
var listTokens = [][]string{
	nil,
	{},
	{"mcp"},
	{"mcp", "tools:call"},
	{"mcp", "tools:call", "weather:read"},
	{"mcp", "tools:call", "repo:write"},
	{"mcp", "tools:call", "repo:admin", "weather:read"},
	{"mcp:all"},
	{"mcp:all", "weather:read", "prompts:secret", "files:read"},
	{"mcp", "prompts:read", "prompts:secret"},
	{"mcp", "res:read", "files:read"},
	{"mcp", "res:read", "files:read", "files:secret", "files:config"},
}

// authorized reports whether m's Handler passes the call of e with token
// (empty: no Authorization header) to the next handler.
func authorized(m *Middleware, e listEntryCase, token string) bool {
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(e.callBody()))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", legacyRev)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	passed := false
	m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true })).ServeHTTP(httptest.NewRecorder(), r)
	return passed
}

// TestListEntryDifferential reads the one policy twice, through
// Middleware.listEntry and through Middleware.Handler, and checks for every
// policy variant, mode, token and entry that: no mode lists an entry that
// no token could reach (a token holding every scope of scopes_supported,
// no token for a public entry, and the current token are all refused its
// call); annotate and off list every entry one of them could call; hide
// lists exactly what the
// middleware authorizes for the same token, entry by entry; and the
// annotation names exactly the scopes the call needs (a token with them is
// authorized, one without any one of them is not).
func TestListEntryDifferential(t *testing.T) {
	base := newFixture(t, nil)
	for _, pol := range listPolicies {
		t.Run(pol.name, func(t *testing.T) {
			ref := base.with(t, pol.mutate)
			tokens := make([]string, len(listTokens))
			principals := make([]*Principal, len(listTokens))
			for i, s := range listTokens {
				if s == nil {
					continue
				}
				tokens[i] = ref.token(t, s...)
				// The principal Handler makes of the token (Authenticate
				// refuses one without the base scopes).
				principals[i] = &Principal{Subject: "user", Issuer: ref.iss.URL, Scopes: s}
			}
			supported := ref.token(t, ref.m.cfg.Metadata.ScopesSupported...)
			checked := 0
			for _, e := range listEntryCases {
				obtainable := authorized(ref.m, e, "") || authorized(ref.m, e, supported)
				for _, mode := range []ListMode{ListAnnotate, ListHide, ListOff} {
					f := base.with(t, func(c *Config) { pol.mutate(c); c.Lists = mode })
					for i, p := range principals {
						v := f.m.listEntry(p, e.list, e.name)
						// A token holding a scope outside scopes_supported
						// reaches what needs it.
						reachable := obtainable || tokens[i] != "" && authorized(ref.m, e, tokens[i])
						checked++
						if v.listed && !reachable {
							t.Errorf("%s %s %q token %v: listed, but no token reaches it", mode, e.list, e.name, listTokens[i])
						}
						if mode != ListHide && v.listed != reachable {
							t.Errorf("%s %s %q token %v: listed %t, reachable %t", mode, e.list, e.name, listTokens[i], v.listed, reachable)
						}
						if mode == ListHide {
							if ok := authorized(f.m, e, tokens[i]); v.listed != ok {
								t.Errorf("hide %s %q token %v: listed %t, Handler authorizes %t", e.list, e.name, listTokens[i], v.listed, ok)
							}
						}
						if mode == ListOff && v.schemes != nil || v.listed != (v.schemes != nil) && mode != ListOff {
							t.Errorf("%s %s %q: schemes %s for listed %t", mode, e.list, e.name, v.schemes, v.listed)
						}
					}
					if mode == ListAnnotate {
						checkAnnotation(t, f, e, f.m.listEntry(nil, e.list, e.name))
					}
				}
			}
			if checked < 800 {
				t.Fatalf("only %d decisions checked", checked)
			}
		})
	}
}

// checkAnnotation checks that the annotation of e names exactly what its
// call needs.
func checkAnnotation(t *testing.T, f *fixture, e listEntryCase, v listVerdict) {
	t.Helper()
	if !v.listed {
		return
	}
	var schemes []securityScheme
	if err := json.Unmarshal(v.schemes, &schemes); err != nil || len(schemes) != 1 {
		t.Fatalf("%s %q: schemes %s", e.list, e.name, v.schemes)
	}
	s := schemes[0]
	if s.Type == schemeNoAuth {
		if !authorized(f.m, e, "") {
			t.Errorf("%s %q: noauth, but refused without a token", e.list, e.name)
		}
		return
	}
	if s.Type != schemeOAuth2 || len(s.Scopes) == 0 {
		t.Fatalf("%s %q: scheme %+v", e.list, e.name, s)
	}
	if !authorized(f.m, e, f.token(t, s.Scopes...)) {
		t.Errorf("%s %q: annotated %v, refused with exactly those", e.list, e.name, s.Scopes)
	}
	for i := range s.Scopes {
		less := slices.Delete(slices.Clone(s.Scopes), i, i+1)
		if authorized(f.m, e, f.token(t, less...)) {
			t.Errorf("%s %q: annotated %v, authorized without %s", e.list, e.name, s.Scopes, s.Scopes[i])
		}
	}
}

func TestListModeText(t *testing.T) {
	for _, mode := range []ListMode{ListAnnotate, ListHide, ListOff} {
		b, err := mode.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back ListMode
		if err := back.UnmarshalText(b); err != nil || back != mode {
			t.Errorf("%s: round trip %v, %v", b, back, err)
		}
	}
	var m ListMode
	if err := m.UnmarshalText([]byte("Hide")); err == nil {
		t.Error("Hide accepted")
	}
	if _, err := ListMode(7).MarshalText(); err == nil {
		t.Error("ListMode(7) marshalled")
	}
	base := newFixture(t, nil)
	if _, err := New(func() Config { c := testConfig(base.v, base.iss); c.Lists = 3; return c }()); err == nil {
		t.Error("New accepted Lists 3")
	}
}

// TestListEntryUnknownList: a list method other than the four is never
// listed.
func TestListEntryUnknownList(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Metadata.ScopesSupported = nil })
	if v := f.m.listEntry(nil, "tasks/list", "x"); v.listed {
		t.Errorf("tasks/list entry listed: %+v", v)
	}
}

// TestListEntryExamples pins the annotations of a few entries, for a
// client without a token under ListAnnotate.
func TestListEntryExamples(t *testing.T) {
	tests := []struct {
		policy string
		e      listEntryCase
		want   string // "" for not listed
	}{
		{"scopes from policy", listEntryCase{methodToolsList, "get_weather"}, "oauth2[mcp tools:call weather:read]"},
		{"scopes from policy", listEntryCase{methodToolsList, "unlisted_tool"}, "oauth2[mcp tools:call]"},
		{"deny unlisted", listEntryCase{methodToolsList, "unlisted_tool"}, ""},
		{"published subset", listEntryCase{methodToolsList, "delete_repo"}, ""},
		{"published subset", listEntryCase{methodToolsList, "push"}, "oauth2[mcp tools:call repo:write]"},
		{"hierarchy published", listEntryCase{methodToolsList, "push"}, "oauth2[mcp tools:call repo:write]"},
		{"hierarchy published", listEntryCase{methodToolsList, "get_weather"}, ""},
		{"scopes from policy", listEntryCase{methodResourcesList, "file:///projects/../secret/k"}, ""},
		{"scopes from policy", listEntryCase{methodResourcesList, "file:///projects/myapp/config.json"}, "oauth2[mcp res:read files:config]"},
		{"scopes from policy", listEntryCase{methodTemplatesList, "file:///projects/{name}"}, "oauth2[mcp res:read files:read]"},
		{"scopes from policy", listEntryCase{methodTemplatesList, "file:///projects/secret/{name}"}, "oauth2[mcp res:read files:secret]"},
		{"scopes from policy", listEntryCase{methodTemplatesList, "file:///projects/myapp/config.json{?v}"}, "oauth2[mcp res:read files:config]"},
		{"scopes from policy", listEntryCase{methodTemplatesList, "file:///proj{x}"}, "oauth2[mcp res:read]"},
		{"deny unlisted", listEntryCase{methodTemplatesList, "mem://x/{y}"}, ""},
		{"public and deny", listEntryCase{methodToolsList, "public_tool"}, "noauth[]"},
		{"public and deny", listEntryCase{methodResourcesList, "mem://public/readme"}, "noauth[]"},
	}
	base := newFixture(t, nil)
	for _, tc := range tests {
		i := slices.IndexFunc(listPolicies, func(p struct {
			name   string
			mutate func(*Config)
		}) bool {
			return p.name == tc.policy
		})
		f := base.with(t, listPolicies[i].mutate)
		v := f.m.listEntry(nil, tc.e.list, tc.e.name)
		got := ""
		if v.listed {
			var s []securityScheme
			if err := json.Unmarshal(v.schemes, &s); err != nil {
				t.Fatal(err)
			}
			got = fmt.Sprintf("%s%v", s[0].Type, s[0].Scopes)
		}
		if got != tc.want {
			t.Errorf("%s: %s %q: got %q, want %q", tc.policy, tc.e.list, tc.e.name, got, tc.want)
		}
	}
}
