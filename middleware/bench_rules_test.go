package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// BenchmarkRules is a cached, authorized request through Handler with
// and without rules (docs/performance.md, "Rules"):
//
//   - rules=0 and rules=10: a 2026-07-28 tools/call of get_weather with
//     no rule, and with ten rules that all select it and none of which
//     denies (conditions over user, mcp.name and mcp.args);
//   - prefixes=1 and prefixes=1000: a resources/read whose URI matches
//     one of 1 or 1,000 Operations.Resources prefix rules;
//   - pins=on: the tools/call of rules=0 with Config.Pins on (the
//     in-process store, get_weather pinned and listed unchanged).
func BenchmarkRules(b *testing.B) {
	env := newBenchEnv(b)
	v := env.validator(b, 0)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	dw := &discardWriter{h: http.Header{}}
	resTok := env.iss.Token(b, authtest.Token{Scopes: []string{"mcp", "res:read", "files:read"}})
	run := func(name string, cfg Config, method, target string) {
		m, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		h := m.Handler(next)
		raw := []byte(rpcBody(modernRev, method, target))
		tok := env.token
		if method == "resources/read" {
			tok = resTok
		}
		r := rpcRequest(modernRev, method, target, tok)
		body := &rewindBody{}
		r.Body, r.ContentLength = body, int64(len(raw))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			rec := httptest.NewRecorder()
			body.Reset(raw)
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusNoContent {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			start := dpopCPUTime()
			for b.Loop() {
				body.Reset(raw)
				h.ServeHTTP(dw, r)
			}
			reportCPU(b, start)
		})
	}
	cfg := testConfig(v, env.iss)
	run("rules=0", cfg, "tools/call", "get_weather")
	cfg.Rules = benchRules()
	run("rules=10", cfg, "tools/call", "get_weather")
	pins := testConfig(v, env.iss)
	pins.Pins = ToolPins{On: true, Store: NewMemoryPinStore()}
	if _, err := pins.Pins.Store.Observe(b.Context(), resource, []string{"get_weather"}, []string{"d"}); err != nil {
		b.Fatal(err)
	}
	run("pins=on", pins, "tools/call", "get_weather")
	for _, n := range []int{1, 1000} {
		cfg := testConfig(v, env.iss)
		cfg.Operations.Resources = nil
		for i := range n - 1 {
			cfg.Operations.Resources = append(cfg.Operations.Resources, ResourceRule{URI: fmt.Sprintf("file:///p%04d/", i), Prefix: true, Scopes: []string{"files:read"}})
		}
		cfg.Operations.Resources = append(cfg.Operations.Resources, ResourceRule{URI: "file:///projects/", Prefix: true, Scopes: []string{"files:read"}})
		run(fmt.Sprintf("prefixes=%d", n), cfg, "resources/read", "file:///projects/myapp/readme.md")
	}
}

// benchRules are the ten rules of rules=10: all select get_weather, none
// denies it.
func benchRules() []Rule {
	conds := []string{
		"mcp.args.location == 'Paris'", "has(mcp.args.tenant) && mcp.args.tenant != user.tenant", "user.subject == 'mallory'",
		"mcp.name == 'delete_repo'", "user.client == 'blocked'", "mcp.args.location.startsWith('Secret')",
		"'admin' in user.scopes && mcp.args.location == ''", "user.issuer == 'https://evil.example'",
		"size(mcp.args) > 10", "mcp.method != 'tools/call'",
	}
	var rules []Rule
	for i, c := range conds {
		rules = append(rules, Rule{Name: fmt.Sprintf("r%d", i), Tools: []string{"get_*"}, DenyWhen: c})
	}
	return rules
}
