package proxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/internal/stdiobridge/testserver"
	"github.com/mcpguard/mcpguard/proxy"
)

func TestMain(m *testing.M) {
	if os.Getenv(testserver.Env) != "" {
		testserver.Main() // this test binary as a stdio MCP server
		return
	}
	os.Exit(m.Run())
}

// stdioEnv is a proxy whose route runs this test binary as a stdio
// server (internal/stdiobridge/testserver) per session.
func stdioEnv(t *testing.T, dir string) *testEnv {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.Upstream = ""
		r.Stdio = proxy.Stdio{Command: []string{exe}, Env: map[string]string{testserver.Env: "1"}, Dir: dir}
	}})
}

func toolText(ctx context.Context, cs *mcp.ClientSession, tool string) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New("tool error")
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// TestStdioRoute: the whole decision holds in front of a stdio server:
// no token 401, a token without the tool's scope 403, a token with it
// reaches the child; each user's session has its own process, told who
// its user is, in its own templated directory.
func TestStdioRoute(t *testing.T) {
	base := t.TempDir()
	e := stdioEnv(t, filepath.Join(base, "{tenant}", "{subject}"))
	ctx := testContext(t)

	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, http.Header{"Content-Type": {"application/json"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", resp.StatusCode)
	}

	alice := e.connect(ctx, t, e.token(t, "alice", baseScope), nil)
	bob := e.connect(ctx, t, e.token(t, "bob", baseScope, adminScope), nil)
	for _, want := range []string{`{"text":"1"}`, `{"text":"2"}`} {
		if got, err := toolText(ctx, alice, "incr"); err != nil || got != want {
			t.Fatalf("alice incr = %q, %v; want %s", got, err, want)
		}
	}
	if got, err := toolText(ctx, bob, "incr"); err != nil || got != `{"text":"1"}` {
		t.Fatalf("bob incr = %q, %v; want 1", got, err)
	}
	got, err := toolText(ctx, alice, "whoami")
	if err != nil || !strings.Contains(got, "sub=alice iss="+e.issuer+" tenant=acme client=") ||
		!strings.Contains(got, "cwd="+filepath.Join(base, "acme", "alice")) {
		t.Fatalf("alice whoami = %q, %v", got, err)
	}
	// alice lacks the admin scope: the proxy refuses (403), the child
	// never sees the call.
	if _, err := toolText(ctx, alice, "admin_only"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("alice admin_only: %v, want a 403", err)
	}
	if got, err := toolText(ctx, bob, "admin_only"); err != nil || got != `{"text":"admin:bob"}` {
		t.Fatalf("bob admin_only = %q, %v", got, err)
	}
}

// TestStdioSessionOfAnotherUser: bob cannot use alice's session (and so
// never reaches her process).
func TestStdioSessionOfAnotherUser(t *testing.T) {
	e := stdioEnv(t, "")
	hdr := func(tok string) http.Header {
		return http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp := do(t, "POST", e.resource, init, hdr(e.token(t, "alice", baseScope)))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	h := hdr(e.token(t, "bob", baseScope))
	h.Set("Mcp-Session-Id", sid)
	resp = do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"incr","arguments":{}}}`, h)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob in alice's session: %d %s, want 404", resp.StatusCode, body)
	}
}

// TestStdioConfig: a stdio route from the file, and what New refuses.
func TestStdioConfig(t *testing.T) {
	const file = `routes:
  - resource: http://127.0.0.1:8080/mcp
    issuers: [http://127.0.0.1:9000]
    stdio:
      command: [env, A=1]
      env: {GREETING: hi}
      pass_env: [PATH]
      dir: /srv/mcp/{tenant}/{subject}
      max_per_user: 2
      idle_timeout: 5m
`
	c, err := proxy.Parse("stdio.yaml", []byte(file), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := c.Routes[0].Stdio
	if strings.Join(s.Command, " ") != "env A=1" || s.Env["GREETING"] != "hi" || s.Dir != "/srv/mcp/{tenant}/{subject}" || s.MaxPerUser != 2 || s.IdleTimeout.String() != "5m0s" {
		t.Fatalf("parsed %+v", s)
	}
	base := func() proxy.Route {
		return proxy.Route{Resource: "http://127.0.0.1:8080/mcp", Issuers: []string{"http://127.0.0.1:9000"},
			Stdio: proxy.Stdio{Command: []string{"env"}}}
	}
	for _, tc := range []struct {
		name string
		mod  func(r *proxy.Route)
		want string
	}{
		{"upstream too", func(r *proxy.Route) { r.Upstream = "http://127.0.0.1:3000/mcp" }, "exclusive"},
		{"identity", func(r *proxy.Route) { r.Identity.Mode = "headers" }, "identity does not apply"},
		{"negative", func(r *proxy.Route) { r.Stdio.MaxChildren = -1 }, "stdio.max_children must not be negative"},
		{"relative dir", func(r *proxy.Route) { r.Stdio.Dir = "srv/{subject}" }, "want an absolute path"},
		{"partial placeholder", func(r *proxy.Route) { r.Stdio.Dir = "/srv/x-{subject}" }, "whole path component"},
		{"user var", func(r *proxy.Route) { r.Stdio.Env = map[string]string{"MCPGUARD_USER_SUBJECT": "x"} }, "set by the proxy"},
		{"NUL", func(r *proxy.Route) { r.Stdio.Command = []string{"env", "a\x00b"} }, "NUL"},
		{"{dir} in env without dir", func(r *proxy.Route) { r.Stdio.Env = map[string]string{"MEMORY_FILE_PATH": "{dir}/memory.jsonl"} },
			"routes[0].stdio: env: MEMORY_FILE_PATH names {dir}, which needs dir"},
		{"{dir} in an argument without dir", func(r *proxy.Route) { r.Stdio.Command = []string{"env", "{dir}"} }, "routes[0].stdio: command: an argument names {dir}, which needs dir"},
		{"{dir} in the program", func(r *proxy.Route) { r.Stdio.Command = []string{"{dir}/server"}; r.Stdio.Dir = "/srv/{subject}" },
			"{dir} is not allowed in the program"},
		{"missing command", func(r *proxy.Route) { r.Stdio.Command = []string{"/nonexistent/mcp-server"} }, `command "/nonexistent/mcp-server"`},
	} {
		r := base()
		tc.mod(&r)
		px, err := proxy.New(proxy.Config{Routes: []proxy.Route{r}})
		if err == nil {
			px.Close()
		}
		if !errors.Is(err, proxy.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig with %q", tc.name, err, tc.want)
		}
	}
}

// childPIDs lists the processes (zombies included) whose parent is this
// test process, from /proc.
func childPIDs(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []int
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			out = append(out, pid)
		}
	}
	return out
}

// TestStdioCloseReaps: Proxy.Close stops every child of its stdio routes
// and reaps it: no child process of the proxy is left, running or zombie.
func TestStdioCloseReaps(t *testing.T) {
	before := len(childPIDs(t))
	e := stdioEnv(t, "")
	ctx := testContext(t)
	for _, sub := range []string{"alice", "bob", "carol"} {
		cs := e.connect(ctx, t, e.token(t, sub, baseScope), nil)
		if _, err := toolText(ctx, cs, "incr"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(childPIDs(t)) - before; n != 3 {
		t.Fatalf("%d children running, want 3", n)
	}
	if err := e.px.Close(); err != nil {
		t.Fatal(err)
	}
	if left := childPIDs(t); len(left) != before {
		t.Fatalf("after Close: children %v, want %d", left, before)
	}
}

// TestStdioPerUser: with stdio.per_user, alice's two 2025-11-25 sessions
// (each bound to her by the middleware) share her process, bob's never
// does, and bob cannot use alice's session ids.
func TestStdioPerUser(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.Upstream = ""
		r.Stdio = proxy.Stdio{Command: []string{exe}, Env: map[string]string{testserver.Env: "1"}, PerUser: true}
	}})
	ctx := testContext(t)
	session := func(tok string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource, HTTPClient: &http.Client{Transport: bearerRT{tok, nil}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	aliceTok, bobTok := e.token(t, "alice", baseScope), e.token(t, "bob", baseScope)
	a1, a2, b1 := session(aliceTok), session(aliceTok), session(bobTok)
	for i, step := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{a1, "1"}, {a2, "2"}, {b1, "1"}, {a1, "3"}} {
		if got, err := toolText(ctx, step.cs, "incr"); err != nil || got != `{"text":"`+step.want+`"}` {
			t.Fatalf("step %d: incr = %q, %v; want %s", i, got, err, step.want)
		}
	}
	h := http.Header{"Authorization": {"Bearer " + bobTok}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Session-Id": {a2.ID()}, "Mcp-Protocol-Version": {"2025-11-25"}}
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"incr","arguments":{}}}`, h)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob in alice's shared session: %d, want 404", resp.StatusCode)
	}
	if got, err := toolText(ctx, a2, "incr"); err != nil || got != `{"text":"4"}` {
		t.Fatalf("alice after bob's attempt: %q, %v; want 4", got, err)
	}
}
