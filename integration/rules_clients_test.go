package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
)

// seenCall is one tools/call a server answered: the tool, the status and
// the WWW-Authenticate challenge.
type seenCall struct {
	tool   string
	secret bool // the arguments mention "secret"
	status int
	www    string
}

// callsSeen records the tools/call requests a handler answers, at the
// moment its status is written (so before the client can read it).
type callsSeen struct {
	mu    sync.Mutex
	calls []seenCall
}

func (c *callsSeen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			h.ServeHTTP(w, r)
			return
		}
		sc := seenCall{tool: msg.Params.Name, secret: bytes.Contains(msg.Params.Arguments, []byte("secret"))}
		h.ServeHTTP(&statusWriter{ResponseWriter: w, record: func(status int) {
			sc.status, sc.www = status, w.Header().Get("WWW-Authenticate")
			c.mu.Lock()
			c.calls = append(c.calls, sc)
			c.mu.Unlock()
		}}, r)
	})
}

// since returns the calls recorded after the first n.
func (c *callsSeen) since(n int) []seenCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls[n:])
}

func (c *callsSeen) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// statusWriter calls record once, with the status, before it is written.
type statusWriter struct {
	http.ResponseWriter
	record func(int)
	done   bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.done {
		w.done = true
		w.record(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rulesEnv is the example server with eventRules, behind the library or
// mcpguard proxy, and what its front (the example server, or the proxy)
// and, behind the proxy, the upstream answered.
type rulesEnv struct {
	*env
	front, upstream *callsSeen
}

func newRulesEnv(t *testing.T, viaProxy, stateful bool) *rulesEnv {
	t.Helper()
	re := &rulesEnv{front: &callsSeen{}, upstream: &callsSeen{}}
	cfg := envConfig{viaProxy: viaProxy, stateful: stateful, rules: eventRules, wrapMCP: re.upstream.wrap}
	if viaProxy {
		cfg.wrapProxy = re.front.wrap
	} else {
		re.upstream = re.front
		cfg.wrapMCP = re.front.wrap
	}
	re.env = newEnv(t, cfg)
	return re
}

// terminal is the challenge of the terminal 403 (a rule's denial).
func (re *rulesEnv) terminal() string { return `Bearer resource_metadata="` + re.metaURL + `"` }

// checkSteppedUp: the front saw whoami twice, the rule's step-up
// challenge (the operation's scopes and the rule's) and then the call.
func (re *rulesEnv) checkSteppedUp(t *testing.T, seen []seenCall) {
	t.Helper()
	want := []seenCall{
		{tool: server.ToolWhoami, status: 403, www: re.insufficientScope(baseScope, server.ScopeNotesRead)},
		{tool: server.ToolWhoami, status: 200},
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the server saw %+v,\nwant %+v", seen, want)
	}
}

// checkDenied: the front saw notes_write with the secret twice, the
// operation's step-up (challenge stepUp) and then the rule's denial, and
// nothing after it; behind the proxy, the upstream never saw it.
func (re *rulesEnv) checkDenied(t *testing.T, seen, upstream []seenCall, stepUp string) {
	t.Helper()
	want := []seenCall{
		{tool: server.ToolNotesWrite, secret: true, status: 403, www: stepUp},
		{tool: server.ToolNotesWrite, secret: true, status: 403, www: re.terminal()},
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the server saw %+v,\nwant %+v (one step-up, one denial, no retry)", seen, want)
	}
	if re.px != nil && len(upstream) != 0 {
		t.Errorf("the upstream saw %+v behind the proxy's denial", upstream)
	}
}

// TestRulesGoSDKClient: the official go-sdk client against a
// require-scopes rule and a deny rule (eventRules), with the example
// go-sdk server stateless and stateful, behind the library and behind
// mcpguard proxy. On the rule's 403 insufficient_scope (naming the
// operation's scopes and the rule's) it steps up once and the call
// completes; on the deny rule's terminal 403 it stops: the server saw
// exactly one request for the denied call after the step-up, and the
// authorization server no further authorization.
func TestRulesGoSDKClient(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"library", "proxy"} {
		for _, stateful := range []bool{false, true} {
			mode := map[bool]string{false: "stateless", true: "stateful"}[stateful]
			t.Run(via+"/"+mode, func(t *testing.T) {
				t.Parallel()
				re := newRulesEnv(t, via == "proxy", stateful)
				revs := revisions
				if stateful {
					revs = []string{rev20251125} // 2026-07-28 is stateless
				}
				for _, rev := range revs {
					t.Run(rev, func(t *testing.T) {
						ctx := testContext(t)
						n, az := re.front.len(), re.authorizations()
						cs, _ := re.connect(ctx, t, sdkClient{reg: viaDCR, revision: rev, loginHint: "alice@acme"})
						defer cs.Close()
						var who server.WhoamiResult
						callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &who)
						if who.Subject != "alice" {
							t.Errorf("whoami = %+v", who)
						}
						re.checkSteppedUp(t, re.front.since(n))
						if got := re.authorizations() - az; got != 2 {
							t.Errorf("%d authorizations, want 2 (the first, the rule's step-up)", got)
						}

						n, az = re.front.len(), re.authorizations()
						nu := re.upstream.len()
						_, err := cs.CallTool(ctx, callParams(server.ToolNotesWrite, map[string]any{"text": "top secret"}))
						if err == nil {
							t.Fatal("the denied call succeeded")
						}
						// 2025-11-25 asks for the union with the token's
						// scopes (LegacyScopes union, the default).
						stepUp := re.insufficientScope(baseScope, server.ScopeNotesWrite)
						if rev == rev20251125 {
							stepUp = re.insufficientScope(baseScope, server.ScopeNotesWrite, server.ScopeNotesRead)
						}
						re.checkDenied(t, re.front.since(n), re.upstream.since(nu), stepUp)
						if got := re.authorizations() - az; got != 1 {
							t.Errorf("%d authorizations, want 1 (the operation's step-up; none after the denial)", got)
						}
					})
				}
			})
		}
	}
}

// TestRulesTypeScriptClients: the TypeScript SDK v1 and v2 clients
// (driver.mjs --tool) against the same rules, with the example go-sdk
// server stateless and stateful (2025-11-25), behind the library and
// behind mcpguard proxy: each steps up on the rule's 403
// insufficient_scope and completes whoami, and stops on the deny rule's
// terminal 403 after exactly one request for the denied call.
func TestRulesTypeScriptClients(t *testing.T) {
	node := requireNode(t)
	t.Parallel()
	for _, env := range []struct {
		via      string
		stateful bool
	}{{"library", false}, {"proxy", false}, {"library", true}, {"proxy", true}} {
		mode := map[bool]string{false: "stateless", true: "stateful"}[env.stateful]
		t.Run(env.via+"/"+mode, func(t *testing.T) {
			t.Parallel()
			re := newRulesEnv(t, env.via == "proxy", env.stateful)
			// One client at a time: the counts are per run.
			for _, c := range tsClients {
				if env.stateful && c.revision != rev20251125 {
					continue // 2026-07-28 is stateless
				}
				t.Run(c.sdk+"/"+c.revision, func(t *testing.T) {
					drive := func(args ...string) *driverResult { // each run bounded by nodeTimeout
						ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
						defer cancel()
						return runDriver(ctx, t, node, append([]string{"--sdk", c.sdk, "--revision", c.revision, "--url", re.mcpURL}, args...)...)
					}
					n := re.front.len()
					r := drive("--tool", server.ToolWhoami)
					if !r.OK || r.Call == nil || r.Call.IsError || !strings.Contains(r.Call.Text, `"subject":"dev-user"`) {
						t.Errorf("whoami: ok %v error %q call %+v", r.OK, r.Error, r.Call)
					}
					if len(r.Authorizations) != 2 || !strings.Contains(r.Authorizations[1].Scope, server.ScopeNotesRead) {
						t.Errorf("authorizations %+v, want the first and one step-up to %s", r.Authorizations, server.ScopeNotesRead)
					}
					re.checkSteppedUp(t, re.front.since(n))

					n, nu := re.front.len(), re.upstream.len()
					r = drive("--tool", server.ToolNotesWrite, "--args", `{"text":"top secret"}`)
					if r.OK || r.Call != nil {
						t.Errorf("the denied call: ok %v call %+v", r.OK, r.Call)
					}
					if len(r.Authorizations) != 2 {
						t.Errorf("%d authorizations, want 2 (the first, the operation's step-up; none after the denial)", len(r.Authorizations))
					}
					// A new client: its token has the base scope only.
					re.checkDenied(t, re.front.since(n), re.upstream.since(nu), re.insufficientScope(baseScope, server.ScopeNotesWrite))
					t.Logf("%s: denied call ends with %q", r.Client, r.Error)
				})
			}
		})
	}
}

// TestRulesProxiedUpstreams: the same rules in mcpguard proxy in front of
// an mcp-go server and a TypeScript SDK server, called by the go-sdk
// client with a fixed token (no authorization handler, so it cannot step
// up): a require-scopes rule answers its 403 insufficient_scope once and
// the call fails without reaching the upstream, a token with the rule's
// scope is served, and a deny rule stops the call at the proxy: the
// upstream never sees a denied argument.
func TestRulesProxiedUpstreams(t *testing.T) {
	t.Parallel()
	rules := []middleware.Rule{
		eventRules[0], // whoami needs notes:read
		{Name: "no-secret-tenants", Tools: []string{"tenant_*"}, DenyWhen: "has(mcp.args.tenant) && mcp.args.tenant.contains('secret')"},
	}
	for _, upstream := range []string{"mcp-go", "typescript"} {
		t.Run(upstream, func(t *testing.T) {
			t.Parallel()
			front, seen := &callsSeen{}, &callsSeen{}
			cfg := envConfig{rules: rules, wrapProxy: front.wrap}
			var p *proxied
			switch upstream {
			case "mcp-go":
				s := mcpgoserver.NewMCPServer("mcp-go-upstream", "1")
				s.AddTool(mcpgomcp.NewTool(server.ToolWhoami), func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
					return mcpgomcp.NewToolResultText("mcp-go"), nil
				})
				s.AddTool(mcpgomcp.NewTool("tenant_notes", mcpgomcp.WithString("tenant")), func(_ context.Context, r mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
					return mcpgomcp.NewToolResultText("notes of " + r.GetString("tenant", "")), nil
				})
				ts := httptest.NewServer(seen.wrap(mcpgoserver.NewStreamableHTTPServer(s)))
				t.Cleanup(ts.Close)
				p = newProxiedWith(t, cfg, func(string, string) string { return ts.URL + "/mcp" })
			case "typescript":
				node := requireUpstreamsNode(t)
				p = newProxiedWith(t, cfg, func(jwksURL, issuer string) string {
					return startProc(t, upstreamsDir, nil, node, "ts-upstream.mjs", "--jwks", jwksURL, "--issuer", issuer)
				})
			}
			ctx := testContext(t)
			mint := func(scopes ...string) string {
				tok, err := p.as.IssueToken("alice", "acme", "proxied-client", p.resource, scopes)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			metaURL := strings.Replace(p.resource, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)

			// Each call in a session of its own: the go-sdk client closes
			// its session on a refused request.
			call := func(tok, name string, args map[string]any) (string, error) {
				cs := p.connect(ctx, t, tok)
				defer cs.Close()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					return "", err
				}
				return contentText(res), nil
			}
			base, read := mint(baseScope), mint(baseScope, server.ScopeNotesRead)
			if _, err := call(base, server.ToolWhoami, map[string]any{}); err == nil {
				t.Error("whoami without the rule's scope succeeded")
			}
			if _, err := call(base, "tenant_notes", map[string]any{"tenant": "top secret"}); err == nil {
				t.Error("the denied call succeeded")
			}
			if got, err := call(base, "tenant_notes", map[string]any{"tenant": "acme"}); err != nil || got != "notes of acme" {
				t.Errorf("tenant_notes = %q, %v", got, err)
			}
			if got, err := call(read, server.ToolWhoami, map[string]any{}); err != nil || got == "" {
				t.Errorf("whoami with the rule's scope = %q, %v", got, err)
			}

			want := []seenCall{
				{tool: server.ToolWhoami, status: 403, www: `Bearer error="insufficient_scope", scope="` + baseScope + ` ` + server.ScopeNotesRead +
					`", resource_metadata="` + metaURL + `", error_description="The operation requires additional scope"`},
				{tool: "tenant_notes", secret: true, status: 403, www: `Bearer resource_metadata="` + metaURL + `"`},
				{tool: "tenant_notes", status: 200},
				{tool: server.ToolWhoami, status: 200},
			}
			if got := front.since(0); !slices.Equal(got, want) {
				t.Errorf("the proxy saw %+v,\nwant %+v", got, want)
			}
			switch upstream {
			case "mcp-go":
				if got, want := seen.since(0), []seenCall{{tool: "tenant_notes", status: 200}, {tool: server.ToolWhoami, status: 200}}; !slices.Equal(got, want) {
					t.Errorf("the mcp-go server saw %+v, want %+v", got, want)
				}
			case "typescript":
				if got, err := call(base, "seen_tenants", map[string]any{}); err != nil || got != `["acme"]` {
					t.Errorf("the TypeScript server saw tenants %s (%v), want only acme", got, err)
				}
			}
		})
	}
}
