package integration

//lint:file-ignore SA1019 sampling is deprecated from 2026-07-28, but 2025-11-25 stdio servers still ask for it and the bridge must carry it

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// newDevProxy is devas (auto-approve; DCR when dcr is set) for scopes
// and mcpguard proxy with one route, route(resource, issuer), each on its
// own loopback listener; the proxy is ready when it returns.
func newDevProxy(t *testing.T, scopes []string, dcr bool, route func(resource, issuer string) proxy.Route) (p *proxied, issuer string) {
	t.Helper()
	return newLoggedDevProxy(t, scopes, dcr, route, nil, nil)
}

// newLoggedDevProxy is newDevProxy whose authorization server and proxy
// record what they answer in asLog and pxLog (nil: not recorded).
func newLoggedDevProxy(t *testing.T, scopes []string, dcr bool, route func(resource, issuer string) proxy.Route, asLog, pxLog *serverLog) (p *proxied, issuer string) {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer = "http://" + asTS.Listener.Addr().String()
	p = &proxied{resource: "http://" + pxTS.Listener.Addr().String() + "/mcp"}
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{p.resource}, Scopes: scopes, AutoApprove: true, EnableDCR: dcr})
	if err != nil {
		t.Fatal(err)
	}
	p.as = as
	asTS.Config.Handler = asLog.wrap(as)
	asTS.Start()
	t.Cleanup(asTS.Close)
	px, err := proxy.New(proxy.Config{Routes: []proxy.Route{route(p.resource, issuer)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	p.px = px
	pxTS.Config.Handler = pxLog.wrap(px)
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return p, issuer
}

// newStdioProxied is devas and mcpguard proxy with one stdio route.
func newStdioProxied(t *testing.T, s proxy.Stdio) *proxied {
	t.Helper()
	p, _ := newDevProxy(t, []string{baseScope}, false, func(resource, issuer string) proxy.Route {
		return proxy.Route{Resource: resource, Issuers: []string{issuer}, Scopes: []string{baseScope},
			Validation: proxy.Validation{TenantClaim: "tenant"}, Stdio: s}
	})
	return p
}

// TestStdioEverythingServer: the reference everything server in stdio
// mode behind mcpguard proxy: tools listed and annotated by the proxy, a
// call, progress notifications and a sampling request on the call's
// stream, the environment the child gets (only PATH, HOME and its user),
// and 401 without a token.
func TestStdioEverythingServer(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	p := newStdioProxied(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}})
	ctx := testContext(t)
	var mu sync.Mutex
	var progress []float64
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled through the bridge"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Progress)
			mu.Unlock()
		},
	})
	// 2025-11-25: a session, in which the child may ask the client
	// (sampling); a 2026-07-28 client is below.
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{p.token(t, "alice"), forgedHeaders}}},
		&mcp.ClientSessionOptions{ProtocolVersion: rev20251125})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if ss, ok := tl.Meta["securitySchemes"].([]any); !ok || len(ss) != 1 {
			t.Errorf("tool %s: _meta.securitySchemes = %v, want the proxy's annotation", tl.Name, tl.Meta["securitySchemes"])
		}
	}
	if !slices.Contains(names, "echo") || !slices.Contains(names, "get-env") {
		t.Fatalf("tools = %v", names)
	}
	if got := callText(ctx, t, cs, "echo", map[string]any{"message": "over stdio"}); !strings.Contains(got, "over stdio") {
		t.Errorf("echo = %q", got)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(callText(ctx, t, cs, "get-env", nil)), &env); err != nil {
		t.Fatal(err)
	}
	for k := range env {
		switch {
		case k == "PATH", k == "HOME", strings.HasPrefix(k, "MCPGUARD_USER_"):
		default:
			// Node may add nothing of its own; anything else leaked in.
			t.Errorf("child environment has %s", k)
		}
	}
	if env["MCPGUARD_USER_SUBJECT"] != "alice" || env["MCPGUARD_USER_TENANT"] != "acme" || env["MCPGUARD_USER_CLIENT"] != "proxied-client" {
		t.Errorf("child's user = %v", env)
	}
	if got := callText(ctx, t, cs, "trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5}); !strings.Contains(got, "sampled through the bridge") {
		t.Errorf("sampling: %q", got)
	}
	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.3, "steps": 3}}
	params.SetProgressToken("op-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatalf("long-running operation: %v", err)
	}
	for range 3000 {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) < 3 {
		t.Errorf("progress notifications = %v, want 3", progress)
	}
	mu.Unlock()
	// A 2026-07-28 client (stateless: server/discover, no session) shares
	// alice's stateless child; the bridge drove its initialize.
	mc := mcp.NewClient(&mcp.Implementation{Name: "stdio-modern", Version: "1"}, nil)
	ms, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{p.token(t, "alice"), forgedHeaders}}},
		&mcp.ClientSessionOptions{ProtocolVersion: rev20260728})
	if err != nil {
		t.Fatalf("Connect %s: %v", rev20260728, err)
	}
	t.Cleanup(func() { ms.Close() })
	if v := ms.InitializeResult().ProtocolVersion; v != rev20260728 {
		t.Errorf("stateless client negotiated %q", v)
	}
	if got := callText(ctx, t, ms, "echo", map[string]any{"message": "stateless over stdio"}); !strings.Contains(got, "stateless over stdio") {
		t.Errorf("stateless echo = %q", got)
	}
	req, _ := http.NewRequest("POST", p.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tokenless request: %d, want 401", resp.StatusCode)
	}
}

// TestStdioPythonServer: a Python stdio server (Debian's python3, the
// standard library only): each user's process counts alone, runs in its
// own templated directory, and cannot read the other's note.
func TestStdioPythonServer(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianPython); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing (CI is set, so this test may not skip)", debianPython)
		}
		t.Skipf("%s missing", debianPython)
	}
	script, err := filepath.Abs(filepath.Join(upstreamsDir, "python_stdio.py"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	p := newStdioProxied(t, proxy.Stdio{Command: []string{debianPython, script}, Dir: filepath.Join(base, "{tenant}", "{subject}")})
	ctx := testContext(t)
	alice := p.connect(ctx, t, p.token(t, "alice"))
	bob := p.connect(ctx, t, p.token(t, "../bob"))
	for _, want := range []string{"1", "2"} {
		if got := callText(ctx, t, alice, "incr", nil); got != want {
			t.Fatalf("alice incr = %q, want %s", got, want)
		}
	}
	if got := callText(ctx, t, bob, "incr", nil); got != "1" {
		t.Fatalf("bob incr = %q, want 1", got)
	}
	callText(ctx, t, alice, "write", map[string]any{"text": "alice's secret"})
	// bob's process runs in bob's directory: his own note is not there.
	// (A process is not a sandbox: a server that reads any path it is given
	// can read ../alice/note.txt; the filesystem server's allowed
	// directories are what confine it, TestStdioFilesystemServer.)
	res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || strings.Contains(contentText(res), "secret") {
		t.Fatalf("bob read: %v", contentText(res))
	}
	var who struct {
		Sub, Tenant, Cwd string
		Env              []string
	}
	if err := json.Unmarshal([]byte(callText(ctx, t, bob, "whoami", nil)), &who); err != nil {
		t.Fatal(err)
	}
	if who.Sub != "../bob" || who.Tenant != "acme" || filepath.Dir(who.Cwd) != filepath.Join(base, "acme") || !strings.HasPrefix(filepath.Base(who.Cwd), "~") {
		t.Errorf("bob's child: %+v (base %s)", who, base)
	}
	if b, err := os.ReadFile(filepath.Join(base, "acme", "alice", "note.txt")); err != nil || string(b) != "alice's secret" {
		t.Errorf("alice's note: %q, %v", b, err)
	}
}

// requireFilesystemServer returns node and the filesystem server's entry
// point (integration/upstreams' lockfile), or skips (fails under CI).
func requireFilesystemServer(t *testing.T) (string, string) {
	t.Helper()
	node := requireUpstreamsNode(t)
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@modelcontextprotocol/server-filesystem is not installed (CI is set, so this test may not skip): run npm ci in integration/upstreams")
		}
		t.Skip("@modelcontextprotocol/server-filesystem is not installed: run npm ci in integration/upstreams")
	}
	return node, entry
}

// fsCall calls a filesystem tool and returns its text and whether the
// server refused it (a tool error).
func fsCall(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return contentText(res), res.IsError
}

// TestStdioFilesystemServer: the reference filesystem server behind
// mcpguard proxy, one process per user with "." (the user's templated
// directory) as its only allowed directory. Neither user can read, list,
// search, stat, write, move or edit the other's files through any tool,
// by absolute path, by ../, or by offering the other's directory as a
// client root; a crash of one user's child leaves the other's session
// working.
func TestStdioFilesystemServer(t *testing.T) {
	node, entry := requireFilesystemServer(t)
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := newStdioProxied(t, proxy.Stdio{Command: []string{node, entry, "."}, PassEnv: []string{"PATH", "HOME"},
		Dir: filepath.Join(base, "{tenant}", "{subject}")})
	ctx := testContext(t)
	aliceDir, bobDir := filepath.Join(base, "acme", "alice"), filepath.Join(base, "acme", "bob")
	connect := func(sub string, roots ...string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "fs-client", Version: "1"}, nil)
		for _, r := range roots {
			c.AddRoots(&mcp.Root{URI: "file://" + r, Name: "offered"})
		}
		// 2025-11-25 sessions (a crash ends one); 2026-07-28 is
		// TestStdioFilesystemStateless.
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{p.token(t, sub), nil}}},
			&mcp.ClientSessionOptions{ProtocolVersion: rev20251125})
		if err != nil {
			t.Fatalf("Connect %s: %v", sub, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := connect("alice")
	if got, refused := fsCall(ctx, t, alice, "write_file", map[string]any{"path": filepath.Join(aliceDir, "secret.txt"), "content": "alice's secret"}); refused {
		t.Fatalf("alice writes her own file: %s", got)
	}
	if got, refused := fsCall(ctx, t, alice, "read_text_file", map[string]any{"path": filepath.Join(aliceDir, "secret.txt")}); refused || !strings.Contains(got, "alice's secret") {
		t.Fatalf("alice reads her own file: %q %v", got, refused)
	}
	// bob offers alice's directory as a root: hidden by the bridge, so his
	// server keeps "." (his own directory) as its only allowed directory.
	bob := connect("bob", aliceDir)
	if got, refused := fsCall(ctx, t, bob, "write_file", map[string]any{"path": filepath.Join(bobDir, "mine.txt"), "content": "bob's"}); refused {
		t.Fatalf("bob writes his own file: %s", got)
	}
	secret := filepath.Join(aliceDir, "secret.txt")
	fsDenied(ctx, t, bob, aliceDir, bobDir)
	// bob's child crashes (killed from outside): alice's session is untouched.
	killChildOf(t, bobDir)
	if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}}); err == nil {
		t.Error("bob's session still answers after his child died")
	}
	if got, refused := fsCall(ctx, t, alice, "read_text_file", map[string]any{"path": secret}); refused || !strings.Contains(got, "alice's secret") {
		t.Errorf("alice after bob's crash: %q %v", got, refused)
	}
}

// TestStdioFilesystemStateless: the same denials for 2026-07-28 clients,
// each user's stateless requests served by that user's one child, whose
// allowed directory is given as "{dir}" (the user's directory as an
// absolute path) rather than ".".
func TestStdioFilesystemStateless(t *testing.T) {
	node, entry := requireFilesystemServer(t)
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := newStdioProxied(t, proxy.Stdio{Command: []string{node, entry, "{dir}"}, PassEnv: []string{"PATH", "HOME"},
		Dir: filepath.Join(base, "{tenant}", "{subject}")})
	ctx := testContext(t)
	aliceDir, bobDir := filepath.Join(base, "acme", "alice"), filepath.Join(base, "acme", "bob")
	connect := func(sub string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "fs-client", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{p.token(t, sub), nil}}},
			&mcp.ClientSessionOptions{ProtocolVersion: rev20260728})
		if err != nil {
			t.Fatalf("Connect %s: %v", sub, err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != rev20260728 {
			t.Fatalf("%s negotiated %q", sub, v)
		}
		return cs
	}
	alice := connect("alice")
	if got, refused := fsCall(ctx, t, alice, "write_file", map[string]any{"path": filepath.Join(aliceDir, "secret.txt"), "content": "alice's secret"}); refused {
		t.Fatalf("alice writes her own file: %s", got)
	}
	// A second client of alice reaches the same child and directory.
	if got, refused := fsCall(ctx, t, connect("alice"), "read_text_file", map[string]any{"path": filepath.Join(aliceDir, "secret.txt")}); refused || !strings.Contains(got, "alice's secret") {
		t.Fatalf("alice's second client reads her file: %q %v", got, refused)
	}
	bob := connect("bob")
	if got, refused := fsCall(ctx, t, bob, "write_file", map[string]any{"path": filepath.Join(bobDir, "mine.txt"), "content": "bob's"}); refused {
		t.Fatalf("bob writes his own file: %s", got)
	}
	fsDenied(ctx, t, bob, aliceDir, bobDir)
}

// fsDenied checks that bob, whose directory is bobDir, can read, list or
// write nothing of alice's through any tool of the filesystem server.
func fsDenied(ctx context.Context, t *testing.T, bob *mcp.ClientSession, aliceDir, bobDir string) {
	t.Helper()
	secret := filepath.Join(aliceDir, "secret.txt")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": secret}},
		{"read_text_file", map[string]any{"path": filepath.Join(bobDir, "..", "alice", "secret.txt")}},
		{"read_text_file", map[string]any{"path": "../alice/secret.txt"}},
		{"read_file", map[string]any{"path": secret}},
		{"read_media_file", map[string]any{"path": secret}},
		{"read_multiple_files", map[string]any{"paths": []string{secret}}},
		{"list_directory", map[string]any{"path": aliceDir}},
		{"list_directory_with_sizes", map[string]any{"path": aliceDir}},
		{"directory_tree", map[string]any{"path": aliceDir}},
		{"search_files", map[string]any{"path": aliceDir, "pattern": "secret"}},
		{"get_file_info", map[string]any{"path": secret}},
		{"write_file", map[string]any{"path": secret, "content": "bob was here"}},
		{"write_file", map[string]any{"path": filepath.Join(aliceDir, "new.txt"), "content": "bob was here"}},
		{"edit_file", map[string]any{"path": secret, "edits": []map[string]any{{"oldText": "alice", "newText": "bob"}}}},
		{"create_directory", map[string]any{"path": filepath.Join(aliceDir, "bobs")}},
		{"move_file", map[string]any{"source": secret, "destination": filepath.Join(bobDir, "stolen.txt")}},
	} {
		got, refused := fsCall(ctx, t, bob, tc.tool, tc.args)
		// read_multiple_files reports each file's refusal in its text.
		if (!refused && !strings.Contains(got, "Access denied")) || strings.Contains(got, "alice's secret") {
			t.Errorf("bob %s %v: refused %v, %q", tc.tool, tc.args, refused, got)
		}
	}
	if got, _ := fsCall(ctx, t, bob, "list_allowed_directories", map[string]any{}); !strings.Contains(got, bobDir) || strings.Contains(got, aliceDir) {
		t.Errorf("bob's allowed directories: %q", got)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "alice's secret" {
		t.Errorf("alice's file after bob: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(aliceDir); len(ents) != 1 {
		t.Errorf("alice's directory after bob: %v", ents)
	}
}

// killChildOf kills the process whose working directory is dir (/proc).
func killChildOf(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for range 3000 {
				if _, err := os.Stat(filepath.Join("/proc", e.Name(), "cwd")); err != nil {
					return
				}
				if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			return
		}
	}
	t.Fatalf("no process in %s", dir)
}
