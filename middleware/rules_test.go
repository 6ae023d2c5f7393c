package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// testRules are the rules of the rule cases: one of each outcome.
func testRules(c *Config) {
	c.Rules = []Rule{
		{Name: "own-tenant-only", Tools: []string{"*"}, DenyWhen: "has(mcp.args.tenant) && mcp.args.tenant != user.tenant"},
		{Name: "admins-delete", Tools: []string{"delete_*"}, RequireScopes: []string{"repo:admin"}, When: "!('admins' in claims.groups)"},
		{Name: "no-secret-client", Resources: []string{"file:///projects/secret/"}, DenyWhen: "user.client == 'untrusted'"},
	}
}

// ruleBody is a tools/call of name with args (raw JSON) for rev.
func ruleBody(rev, name, args string) string {
	meta := ""
	if rev == modernRev {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, name, args, meta)
}

// ruleCall returns a request of a tools/call of name with args, by a
// token with scopes and the extra claims of spec.
func ruleCall(rev, name, args string, scopes []string, spec ...authtest.Token) func(t *testing.T, f *fixture) *http.Request {
	return func(t *testing.T, f *fixture) *http.Request {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(ruleBody(rev, name, args)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("MCP-Protocol-Version", rev)
		if rev == modernRev {
			r.Header.Set("Mcp-Method", "tools/call")
			r.Header.Set("Mcp-Name", name)
		}
		tok := oneSpec(t, spec)
		tok.Scopes = scopes
		r.Header.Set("Authorization", "Bearer "+f.iss.Token(t, tok))
		return r
	}
}

// ruleCases are the golden answers of every rule outcome, for both
// revisions (TestAnswers).
func ruleCases() []answerCase {
	var out []answerCase
	admin := authtest.Token{Claims: map[string]any{"groups": []string{"admins"}}}
	user := authtest.Token{Claims: map[string]any{"groups": []string{"users"}}}
	for _, rev := range []string{legacyRev, modernRev} {
		suffix := "_" + strings.ReplaceAll(rev, "-", "")
		add := func(name string, req func(t *testing.T, f *fixture) *http.Request, status int) {
			out = append(out, answerCase{name: "rule_" + name + suffix, req: req, mutate: testRules, wantStatus: status})
		}
		add("deny", ruleCall(rev, "get_weather", `{"tenant":"tenant-b"}`, []string{"mcp:all", "weather:read"}), 403)
		add("require_scopes", ruleCall(rev, "delete_cache", `{}`, []string{"mcp:all", "repo:write"}, user), 403)
		add("allow", ruleCall(rev, "delete_cache", `{"tenant":"tenant-a"}`, []string{"mcp:all", "repo:write"}, admin), 200)
		add("allow_stepped_up", ruleCall(rev, "delete_cache", `{}`, []string{"mcp:all", "repo:admin"}, user), 200)
		add("missing_claim_denies", ruleCall(rev, "delete_cache", `{}`, []string{"mcp:all", "repo:write"}), 403)
	}
	return out
}

func TestRulesRefusedAtNew(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		want string // in the error
	}{
		{"syntax", Rule{Name: "r1", DenyWhen: "user.tenant == "}, `Rules["r1"]: condition: ERROR: <input>:1:16`},
		{"undeclared", Rule{Name: "r2", DenyWhen: "request.tenant == 'a'"}, `Rules["r2"]: condition: ERROR: <input>:1:1: undeclared reference to 'request'`},
		{"unknown_field", Rule{Name: "r3", DenyWhen: "user.tennant == 'a'"}, `Rules["r3"]: condition: ERROR: <input>:1:5: undefined field 'tennant'`},
		{"not_bool", Rule{Name: "r4", DenyWhen: "user.tenant"}, `Rules["r4"]: condition has type string, want bool`},
		{"dyn_not_bool", Rule{Name: "r5", DenyWhen: "claims.admin"}, `Rules["r5"]: condition has type dyn, want bool`},
		{"cost", Rule{Name: "r6", DenyWhen: "mcp.args.items.all(x, mcp.args.items.all(y, x == y))"}, `Rules["r6"]: condition may cost`},
		{"no_name", Rule{DenyWhen: "true"}, `Rules[0]: a rule needs a name`},
		{"two_outcomes", Rule{Name: "r7", DenyWhen: "true", RequireScopes: []string{"a"}}, `Rules["r7"]: a rule has exactly one outcome`},
		{"no_outcome", Rule{Name: "r8", When: "true"}, `Rules["r8"]: a rule has exactly one outcome`},
		{"when_with_deny", Rule{Name: "r9", DenyWhen: "true", When: "true"}, `Rules["r9"]: When goes with RequireScopes`},
		{"bad_scope", Rule{Name: "r10", RequireScopes: []string{"a b"}}, `Rules["r10"].RequireScopes has an invalid scope token`},
		{"offline_access", Rule{Name: "r11", RequireScopes: []string{"offline_access"}}, `offline_access`},
		{"empty_selector", Rule{Name: "r12", Tools: []string{""}, DenyWhen: "true"}, `Rules["r12"]: empty selector`},
		{"resource_query", Rule{Name: "r13", Resources: []string{"file:///a?x"}, DenyWhen: "true"}, `Rules["r13"]: a resource prefix has a query`},
	}
	f := newFixture(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(f.v, f.iss)
			cfg.Rules = []Rule{tt.rule}
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New accepted the rule")
			}
			if !errors.Is(err, Error{Reason: "config"}) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %s\nwant config error containing %s", err.Error(), tt.want)
			}
		})
	}
	t.Run("repeated_name", func(t *testing.T) {
		cfg := testConfig(f.v, f.iss)
		cfg.Rules = []Rule{{Name: "a", DenyWhen: "true"}, {Name: "a", DenyWhen: "false"}}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `Rules["a"]: repeated rule name`) {
			t.Errorf("New: %v", err)
		}
	})
	t.Run("tenant_argument", func(t *testing.T) {
		cfg := testConfig(f.v, f.iss)
		cfg.TenantArgument = "x' || true || '"
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "TenantArgument") {
			t.Errorf("New: %v", err)
		}
	})
}

// TestRules: each outcome, and every request-time failure denies.
func TestRules(t *testing.T) {
	f := newFixture(t, nil)
	admins := authtest.Token{Claims: map[string]any{"groups": []string{"admins"}, "realm_access": map[string]any{"roles": []string{"auditor"}}}}
	tests := []struct {
		name   string
		rules  []Rule
		tenant string
		tool   string
		args   string
		scopes []string
		spec   authtest.Token
		status int
		reason Reason
		rule   string
	}{
		{name: "deny", rules: []Rule{{Name: "d", Tools: []string{"get_*"}, DenyWhen: "mcp.args.location == 'Paris'"}},
			tool: "get_weather", args: `{"location":"Paris"}`, status: 403, reason: reasonRuleDenied, rule: "d"},
		{name: "deny_not_selected", rules: []Rule{{Name: "d", Tools: []string{"delete_*"}, DenyWhen: "true"}},
			tool: "get_weather", args: `{}`, status: 200, reason: reasonAuthorized},
		{name: "deny_false", rules: []Rule{{Name: "d", Tools: []string{"*"}, DenyWhen: "mcp.args.location == 'Paris'"}},
			tool: "get_weather", args: `{"location":"Rome"}`, status: 200, reason: reasonAuthorized},
		{name: "deny_overrides_in_any_order", rules: []Rule{
			{Name: "b-require", Tools: []string{"*"}, RequireScopes: []string{"weather:admin"}},
			{Name: "a-deny", Tools: []string{"get_weather"}, DenyWhen: "true"},
			{Name: "c-deny", Methods: []string{"tools/call"}, DenyWhen: "true"},
		}, tool: "get_weather", args: `{}`, status: 403, reason: reasonRuleDenied, rule: "a-deny"},
		{name: "require_scopes", rules: []Rule{{Name: "r", Tools: []string{"get_weather"}, RequireScopes: []string{"weather:admin"}}},
			tool: "get_weather", args: `{}`, status: 403, reason: reasonInsufficientScope, rule: "r"},
		{name: "require_scopes_held", rules: []Rule{{Name: "r", Tools: []string{"get_weather"}, RequireScopes: []string{"weather:admin"}}},
			tool: "get_weather", args: `{}`, scopes: []string{"weather:admin"}, status: 200, reason: reasonAuthorized},
		{name: "require_when_false", rules: []Rule{{Name: "r", Tools: []string{"*"}, RequireScopes: []string{"weather:admin"}, When: "!('admins' in claims.groups)"}},
			tool: "get_weather", args: `{}`, spec: admins, status: 200, reason: reasonAuthorized},
		{name: "keycloak_roles", rules: []Rule{{Name: "k", Tools: []string{"*"}, DenyWhen: "!('auditor' in claims.realm_access.roles)"}},
			tool: "get_weather", args: `{}`, spec: admins, status: 200, reason: reasonAuthorized},
		{name: "missing_claim_denies", rules: []Rule{{Name: "m", Tools: []string{"*"}, DenyWhen: "!('admins' in claims.groups)"}},
			tool: "get_weather", args: `{}`, status: 403, reason: reasonRuleDenied, rule: "m"},
		{name: "missing_claim_denies_require_rule", rules: []Rule{{Name: "m", Tools: []string{"*"}, RequireScopes: []string{"x"}, When: "claims.level > 3"}},
			tool: "get_weather", args: `{}`, status: 403, reason: reasonRuleDenied, rule: "m"},
		{name: "missing_arg_denies", rules: []Rule{{Name: "m", Tools: []string{"*"}, DenyWhen: "mcp.args.tenant != user.tenant"}},
			tool: "get_weather", args: `{}`, status: 403, reason: reasonRuleDenied, rule: "m"},
		{name: "type_mismatch_denies", rules: []Rule{{Name: "m", Tools: []string{"*"}, DenyWhen: "mcp.args.count > 3"}},
			tool: "get_weather", args: `{"count":"many"}`, status: 403, reason: reasonRuleDenied, rule: "m"},
		{name: "args_not_object_denies", rules: []Rule{{Name: "m", Tools: []string{"*"}, DenyWhen: "has(mcp.args.tenant)"}},
			tool: "get_weather", args: `["tenant"]`, status: 400, reason: reasonInvalidMessage, rule: "m"},
		{name: "case_variant_arg_denies", rules: []Rule{{Name: "own", Tools: []string{"*"}, DenyWhen: "has(mcp.args.tenant) && mcp.args.tenant != user.tenant"}},
			tool: "get_weather", args: `{"TENANT":"tenant-b"}`, status: 400, reason: reasonInvalidMessage, rule: "own"},
		{name: "case_variant_nested_denies", rules: []Rule{{Name: "own", Tools: []string{"*"}, DenyWhen: "has(mcp.args.tenant) && mcp.args.tenant != user.tenant"}},
			tool: "get_weather", args: `{"x":[{"Tenant":"tenant-b"}]}`, status: 400, reason: reasonInvalidMessage, rule: "own"},
		{name: "tenant_argument_mismatch", tenant: "tenant", tool: "get_weather", args: `{"tenant":"tenant-b"}`, status: 403, reason: reasonRuleDenied, rule: "tenant_argument"},
		{name: "tenant_argument_number", tenant: "tenant", tool: "get_weather", args: `{"tenant":7}`, status: 403, reason: reasonRuleDenied, rule: "tenant_argument"},
		{name: "tenant_argument_case_variant", tenant: "tenant", tool: "get_weather", args: `{"Tenant":"tenant-b"}`, status: 400, reason: reasonInvalidMessage, rule: "tenant_argument"},
		{name: "tenant_argument_match", tenant: "tenant", tool: "get_weather", args: `{"tenant":"tenant-a"}`, status: 200, reason: reasonAuthorized},
		{name: "tenant_argument_absent", tenant: "tenant", tool: "get_weather", args: `{"location":"x"}`, status: 200, reason: reasonAuthorized},
		{name: "tenant_argument_escaped", tenant: "tenant", tool: "get_weather", args: `{"\u0074enant":"tenant-b"}`, status: 403, reason: reasonRuleDenied, rule: "tenant_argument"},
		{name: "revision", rules: []Rule{{Name: "v", DenyWhen: "mcp.revision != '2025-11-25'"}},
			tool: "get_weather", args: `{}`, status: 200, reason: reasonAuthorized},
		{name: "cost_within_limit", rules: []Rule{{Name: "c", Tools: []string{"*"}, DenyWhen: "mcp.args.l.exists(x, x == 1)"}},
			tool: "get_weather", args: `{"l":[0,0,0]}`, status: 200, reason: reasonAuthorized},
		// A list larger than the cost bound assumes: denied.
		{name: "oversized_input_denies", rules: []Rule{{Name: "c", Tools: []string{"*"}, DenyWhen: "mcp.args.l.exists(x, x == 1)"}},
			tool: "get_weather", args: `{"l":[0` + strings.Repeat(",0", maxRuleEntries) + `]}`, status: 403, reason: reasonRuleDenied, rule: "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Decision
			g := f.with(t, func(c *Config) {
				c.Rules, c.TenantArgument = tt.rules, tt.tenant
				c.OnDecision = func(_ context.Context, d Decision) { got = d }
			})
			spec := tt.spec
			spec.Scopes = append([]string{"mcp:all", "weather:read"}, tt.scopes...)
			r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(ruleBody(legacyRev, tt.tool, tt.args)))
			r.Header.Set("MCP-Protocol-Version", legacyRev)
			r.Header.Set("Authorization", "Bearer "+f.iss.Token(t, spec))
			rec := httptest.NewRecorder()
			g.m.Handler(echoHandler()).ServeHTTP(rec, r)
			if rec.Code != tt.status || got.Reason != tt.reason || got.Rule != tt.rule {
				t.Errorf("status %d reason %q rule %q, want %d %q %q; body %s", rec.Code, got.Reason, got.Rule, tt.status, tt.reason, tt.rule, rec.Body)
			}
			if tt.reason == reasonRuleDenied {
				if h := rec.Header().Get("WWW-Authenticate"); strings.Contains(h, "insufficient_scope") || strings.Contains(h, "scope=") {
					t.Errorf("a denial invites a step-up: %s", h)
				}
			}
		})
	}
}

// TestRuleStepUpBounded: a require-scopes rule's step-up is counted by
// the one step-up bound: after Config.StepUpLimit challenges the terminal
// answer follows, and coming back with the scope passes.
func TestRuleStepUpBounded(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Rules = []Rule{{Name: "r", Tools: []string{"get_weather"}, RequireScopes: []string{"weather:admin"}}}
		c.StepUpLimit = 2
	})
	do := func(scopes ...string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(ruleBody(legacyRev, "get_weather", `{}`)))
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+f.token(t, scopes...))
		rec := httptest.NewRecorder()
		f.m.Handler(echoHandler()).ServeHTTP(rec, r)
		return rec.Code, rec.Header().Get("WWW-Authenticate")
	}
	for i := range 2 {
		code, h := do("mcp:all", "weather:read")
		if code != 403 || !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, "weather:admin") || !strings.Contains(h, "weather:read") {
			t.Fatalf("challenge %d: %d %s", i, code, h)
		}
	}
	if code, h := do("mcp:all", "weather:read"); code != 403 || strings.Contains(h, "insufficient_scope") {
		t.Fatalf("third: %d %s, want the terminal 403", code, h)
	}
	if code, _ := do("mcp:all", "weather:read", "weather:admin"); code != 200 {
		t.Fatalf("with the scope: %d", code)
	}
}

// TestRuleResourcePrefixes: resource rules select by canonical URI prefix,
// every matching prefix (not only the longest) judges, and a URI that
// cannot be canonicalised is denied.
func TestRuleResourcePrefixes(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Rules = []Rule{
			{Name: "projects", Resources: []string{"file:///projects/"}, DenyWhen: "user.client == 'blocked'"},
			{Name: "secret", Resources: []string{"file:///projects/secret/"}, DenyWhen: "user.subject != 'boss'"},
		}
	})
	tests := []struct {
		uri, sub, client string
		status           int
	}{
		{"file:///projects/myapp/readme.md", "user-1", "client-1", 200},
		{"file:///projects/myapp/readme.md", "user-1", "blocked", 403},
		{"file:///projects/secret/key.pem", "user-1", "client-1", 403},
		{"file:///projects/secret/key.pem", "boss", "client-1", 200},
		{"file:///projects/secret/key.pem", "boss", "blocked", 403},
		{"file:///other/x", "user-1", "blocked", 200},
	}
	for _, tt := range tests {
		r := rpcRequest(legacyRev, "resources/read", tt.uri, f.iss.Token(t, authtest.Token{Subject: tt.sub, ClientID: tt.client, Scopes: []string{"mcp:all", "files:read", "files:secret"}}))
		rec := httptest.NewRecorder()
		f.m.Handler(echoHandler()).ServeHTTP(rec, r)
		if rec.Code != tt.status {
			t.Errorf("%s by %s/%s: %d, want %d; %s %s", tt.uri, tt.sub, tt.client, rec.Code, tt.status, rec.Header(), rec.Body)
		}
	}
}

func TestMatchName(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true}, {"*", "x", true}, {"a", "a", true}, {"a", "ab", false},
		{"delete_*", "delete_repo", true}, {"delete_*", "undelete_repo", false},
		{"*_repo", "delete_repo", true}, {"*_repo", "delete_repos", false},
		{"a*b*c", "abc", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false}, {"a*a", "a", false}, {"a**", "a", true},
	}
	for _, tt := range tests {
		if got := matchName(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchName(%q, %q) = %t", tt.pattern, tt.name, got)
		}
	}
}

func TestPrefixSet(t *testing.T) {
	ps := newPrefixSet([]prefixEntry[string]{
		{"a/", "1"}, {"a/b/", "2"}, {"a/b/c/", "3"}, {"a/bb/", "4"}, {"b/", "5"}, {"a/b/", "2b"}, {"a/c", "6"},
	})
	tests := []struct {
		s    string
		want string
	}{
		{"a/b/c/d", "3 2 2b 1"}, {"a/b/x", "2 2b 1"}, {"a/bz", "1"}, {"a/bb/x", "4 1"}, {"a/ca", "6 1"},
		{"b/", "5"}, {"c", ""}, {"", ""}, {"a/b", "1"}, {"a/b/c0", "2 2b 1"},
	}
	for _, tt := range tests {
		var got []string
		ps.each(tt.s, func(v string) { got = append(got, v) })
		if strings.Join(got, " ") != tt.want {
			t.Errorf("each(%q) = %q, want %q", tt.s, got, tt.want)
		}
		v, ok := ps.longest(tt.s)
		if want, _, _ := strings.Cut(tt.want, " "); v != want || ok != (want != "") {
			t.Errorf("longest(%q) = %q, %t", tt.s, v, ok)
		}
	}
}

// TestRuleLists: at list time the same compiled rules judge each entry
// with what is known (no arguments): an entry a rule denies whatever the
// arguments is left out in every mode; an entry a rule adds scopes to
// whatever the arguments is annotated with them (and hidden in hide mode
// from a token without them); an entry whose outcome depends on the
// arguments is listed.
func TestRuleLists(t *testing.T) {
	f := newFixture(t, nil)
	rules := []Rule{
		{Name: "no-danger", Tools: []string{"danger_*"}, DenyWhen: "user.subject == 'user-1'"},
		{Name: "admin-cleanup", Tools: []string{"cleanup"}, RequireScopes: []string{"repo:admin"}},
		{Name: "arg-bound", Tools: []string{"transfer"}, DenyWhen: "mcp.args.amount > 10.0"},
		{Name: "arg-step-up", Tools: []string{"wire"}, RequireScopes: []string{"repo:admin"}, When: "mcp.args.amount > 10.0"},
	}
	p := &Principal{Subject: "user-1", Issuer: "iss", Scopes: []string{"mcp:all", "tools:call"}}
	boss := &Principal{Subject: "boss", Issuer: "iss", Scopes: []string{"mcp:all", "tools:call"}}
	for _, mode := range []ListMode{ListAnnotate, ListHide} {
		g := f.with(t, func(c *Config) { c.Rules, c.Lists, c.Metadata.ScopesSupported = rules, mode, nil })
		tests := []struct {
			p      *Principal
			name   string
			listed bool
			scope  string // in the annotation, if listed
		}{
			{p, "danger_zone", false, ""},
			{boss, "danger_zone", true, "tools:call"},
			{p, "cleanup", mode == ListAnnotate, "repo:admin"},
			{p, "transfer", true, "tools:call"},
			{p, "wire", true, "tools:call"},
		}
		for _, tt := range tests {
			v := g.m.listEntry(tt.p, methodToolsList, tt.name)
			if v.listed != tt.listed || (v.listed && !strings.Contains(string(v.schemes), tt.scope)) {
				t.Errorf("mode %d, %s for %s: listed %t %s, want %t with %s", mode, tt.name, tt.p.Subject, v.listed, v.schemes, tt.listed, tt.scope)
			}
		}
	}
}

// TestRuleDecisionArguments: a decision carries the SHA-256 of the
// canonical arguments, the same however the client spelled them, never
// the arguments.
func TestRuleDecisionArguments(t *testing.T) {
	var got []Decision
	f := newFixture(t, func(c *Config) {
		c.TenantArgument = "tenant"
		c.OnDecision = func(_ context.Context, d Decision) { got = append(got, d) }
	})
	for _, args := range []string{`{"tenant":"tenant-b","n":1}`, `{ "n" : 1.0, "\u0074enant":"tenant-b" }`, `{"tenant":"tenant-a"}`} {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(ruleBody(legacyRev, "get_weather", args)))
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:all", "weather:read"))
		f.m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), r)
	}
	if len(got) != 3 || got[0].ArgumentsSHA256 == "" || got[0].ArgumentsSHA256 != got[1].ArgumentsSHA256 || got[2].ArgumentsSHA256 == got[0].ArgumentsSHA256 ||
		got[0].Rule != "tenant_argument" || got[2].Reason != reasonAuthorized || len(got[2].ArgumentsSHA256) != 64 {
		t.Fatalf("decisions = %+v", got)
	}
}
