package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/proxy"
)

// mcpRemoteEntry is mcp-remote's stdio proxy (npm mcp-remote, pinned in
// integration/node's lockfile), the command a host app such as Claude
// Desktop runs in front of a remote server.
var mcpRemoteEntry = filepath.Join(nodeDir, "node_modules", "mcp-remote", "dist", "proxy.js")

// mcpRemoteTimeout bounds each step of a mcp-remote run (one JSON-RPC
// answer, which may include a whole browser sign-in).
const mcpRemoteTimeout = 90 * time.Second

// TestMCPRemoteStdio drives mcp-remote as its host app does (JSON-RPC
// lines on its stdin and stdout) in front of mcpguard proxy with a stdio
// route running the reference everything server, with devas (DCR,
// auto-approve) as the authorization server. The browser mcp-remote opens
// is the BROWSER of the xdg-open that the open package bundles: a script
// that hands the URL to this test, which follows its redirects to
// mcp-remote's callback on 127.0.0.1. Checked: dynamic registration, the
// authorization request (PKCE S256, resource, the challenge's scope), the
// token, initialize, tools/list and echo through the user's child; then
// get-env, which needs envScope, and the proxy's 403 insufficient_scope.
// What mcp-remote 0.15.1 does with the 403 depends on the route: see each
// case (and docs/clients.md).
func TestMCPRemoteStdio(t *testing.T) {
	node := requireNode(t)
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "mcp-remote", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mcp-remote is not installed in integration/node/node_modules (CI is set, so this test may not skip): %s", nodeInstallHint)
		}
		t.Skipf("mcp-remote is not installed in integration/node/node_modules: %s", nodeInstallHint)
	}
	requireUpstreamsNode(t)
	t.Parallel()
	everything, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	stdio := proxy.Stdio{Command: []string{node, everything, "stdio"}, PassEnv: []string{"PATH", "HOME"}}
	const imgScope = "img:read"

	// A route with one more operation scope, which get-env's challenge
	// does not name: mcp-remote steps up as the spec says, signing in
	// again for the union of its scope and the challenge's, and retries
	// the call, which reaches the user's child.
	t.Run("step-up", func(t *testing.T) {
		t.Parallel()
		r := startMCPRemote(t, node, stdio, map[string][]string{"get-env": {envScope}, "get-tiny-image": {imgScope}})
		r.checkScopesSupported(t, baseScope, envScope, imgScope)
		env := toolResultText(t, r.c.call(t, 4, "tools/call", map[string]any{"name": "get-env", "arguments": map[string]any{}}))
		if !strings.Contains(env, "MCPGUARD_USER_SUBJECT") {
			t.Errorf("get-env after the step-up = %q, want the child's environment", env)
		}
		r.check403s(t, 1)
		if err := r.b.wait(func(p []opened) bool { return len(p) == 2 && p[0].done && p[1].done }); err != nil {
			t.Fatal(err)
		}
		checkAuthorizations(t, r.asLog, r.clientID, r.resource, baseScope, baseScope+" "+envScope)
		checkTokens(t, r.asLog, baseScope, baseScope+" "+envScope)
		r.checkEnd(t, 2)
	})

	// The route's only operation scope: get-env's challenge names every
	// scope in scopes_supported. mcp-remote 0.15.1 takes a challenge scope
	// equal to scopes_supported for one it supplied itself and replaces it
	// with its own (the first challenge's, baseScope): its step-up signs
	// in again for baseScope only, retries, gets the same 403, opens the
	// browser a third time without listening for its callback, and
	// answers the host with an error. The session goes on.
	t.Run("challenge-is-scopes_supported", func(t *testing.T) {
		t.Parallel()
		r := startMCPRemote(t, node, stdio, map[string][]string{"get-env": {envScope}})
		r.checkScopesSupported(t, baseScope, envScope)
		if _, rpcErr := r.c.request(t, 4, "tools/call", map[string]any{"name": "get-env", "arguments": map[string]any{}}); string(rpcErr) != `{"code":-32001,"message":"mcp-remote: Unauthorized"}` {
			t.Errorf("get-env answered error %s, want mcp-remote's Unauthorized", rpcErr)
		}
		r.check403s(t, 2)
		// The browser may finish a page after mcp-remote has gone on:
		// wait for the first two to load and the third to reach its
		// callback redirect.
		if err := r.b.wait(func(p []opened) bool { return len(p) == 3 && p[0].done && p[1].done && p[2].callback != "" }); err != nil {
			t.Fatal(err)
		}
		checkAuthorizations(t, r.asLog, r.clientID, r.resource, baseScope, baseScope, baseScope)
		checkTokens(t, r.asLog, baseScope, baseScope)
		if p := r.b.opened(); len(p) != 3 || p[2].done {
			t.Errorf("browser pages %+v, want a third whose callback nobody listens for", p)
		}
		r.checkEnd(t, 2)
	})
}

// mcpRemoteRun is mcp-remote, started by startMCPRemote, signed in and
// connected through mcpguard proxy.
type mcpRemoteRun struct {
	c                 *jsonRPCProc
	b                 *fakeBrowser
	asLog, pxLog      *serverLog
	resource, metaURL string
	callback          string // mcp-remote's callback port
	clientID          string // registered
}

// startMCPRemote starts devas (DCR) and mcpguard proxy with a stdio
// route running s whose tools need the scopes of tools on top of the base
// scope (newLoggedDevProxy), and mcp-remote in front of it. As its host, it initializes, lists the
// tools and calls echo (which the base scope allows), and checks the
// first sign-in: one registration, one authorization and one token for
// the first challenge's scope, the browser opened once.
func startMCPRemote(t *testing.T, node string, s proxy.Stdio, tools map[string][]string) *mcpRemoteRun {
	t.Helper()
	r := &mcpRemoteRun{asLog: &serverLog{}, pxLog: &serverLog{}}
	scopes := []string{baseScope}
	for _, ss := range tools {
		scopes = append(scopes, ss...)
	}
	slices.Sort(scopes)
	p, issuer := newLoggedDevProxy(t, slices.Compact(scopes), true, func(resource, issuer string) proxy.Route {
		return proxy.Route{Resource: resource, Issuers: []string{issuer}, Scopes: []string{baseScope}, Operations: proxy.Operations{Tools: tools}, Stdio: s}
	}, r.asLog, r.pxLog)
	resource := p.resource
	u, _ := url.Parse(resource)
	r.resource, r.metaURL = resource, u.Scheme+"://"+u.Host+"/.well-known/oauth-protected-resource"+u.Path
	r.callback = freePort(t)
	c := newJSONRPCProc()
	r.c = c
	// mcp-remote logs this line once its callback server listens, which
	// it starts for each sign-in.
	r.b = newFakeBrowser(t, strings.TrimPrefix(issuer, "http://"), func(ctx context.Context, n int) error {
		return c.waitStderr(ctx, r.callbackLine(), n)
	})
	dir := t.TempDir()
	browser := filepath.Join(dir, "browser")
	// The script always succeeds, as a browser that opened a page does;
	// what became of the page is the fake browser's to record.
	script := fmt.Sprintf("#!/bin/sh\n%q -e 'fetch(process.argv[1], {method: \"POST\", body: process.argv[2]}).finally(() => process.exit(0))' %q \"$1\"\n", node, r.b.url)
	if err := os.WriteFile(browser, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	entry, err := filepath.Abs(mcpRemoteEntry)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, entry, resource, r.callback, "--host", "127.0.0.1", "--transport", "http-only")
	cmd.Dir = dir
	// Built, not inherited: no DISPLAY, no desktop, so the bundled xdg-open
	// takes its generic path, which runs $BROWSER; tokens and client
	// information go to MCP_REMOTE_CONFIG_DIR, not $HOME.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "BROWSER=" + browser, "MCP_REMOTE_CONFIG_DIR=" + filepath.Join(dir, "mcp-auth")}
	c.start(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp-remote stderr:\n%s", c.stderr())
		}
	})

	initRaw := c.call(t, 1, "initialize", map[string]any{"protocolVersion": rev20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpguard-host", "version": "1"}})
	var initRes struct {
		ProtocolVersion string                `json:"protocolVersion"`
		ServerInfo      struct{ Name string } `json:"serverInfo"`
	}
	if err := json.Unmarshal(initRaw, &initRes); err != nil || initRes.ProtocolVersion != rev20251125 || initRes.ServerInfo.Name == "" {
		t.Fatalf("initialize = %s (%v)", initRaw, err)
	}
	c.notify(t, "notifications/initialized")
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(c.call(t, 2, "tools/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "echo") || !slices.Contains(names, "get-env") {
		t.Fatalf("tools/list = %v, want echo and get-env among them", names)
	}
	if got := toolResultText(t, c.call(t, 3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "through mcp-remote"}})); !strings.Contains(got, "through mcp-remote") {
		t.Errorf("echo = %q", got)
	}
	regs := r.asLog.matching("POST", "/register", 0)
	if len(regs) != 1 || regs[0].status != http.StatusCreated {
		t.Fatalf("registrations = %+v, want one 201", regs)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(regs[0].body), &reg); err != nil || reg.ClientID == "" {
		t.Fatalf("registration answer %q: %v", regs[0].body, err)
	}
	r.clientID = reg.ClientID
	checkAuthorizations(t, r.asLog, r.clientID, resource, baseScope)
	checkTokens(t, r.asLog, baseScope)
	if n := len(r.b.opened()); n != 1 {
		t.Errorf("browser opened %d times before the step-up, want 1: %v", n, r.b.opened())
	}
	return r
}

// callbackLine is the end of the line mcp-remote logs when its callback
// server listens.
func (r *mcpRemoteRun) callbackLine() string {
	return " OAuth callback server running at http://127.0.0.1:" + r.callback
}

// checkScopesSupported checks the route's scopes_supported.
func (r *mcpRemoteRun) checkScopesSupported(t *testing.T, want ...string) {
	t.Helper()
	var prm struct {
		ScopesSupported []string `json:"scopes_supported"`
	}
	if err := getJSON(r.metaURL, &prm); err != nil || !slices.Equal(prm.ScopesSupported, want) {
		t.Fatalf("scopes_supported = %v (%v), want %v", prm.ScopesSupported, err, want)
	}
}

// check403s checks that the proxy answered n POSTs with the step-up
// challenge of get-env.
func (r *mcpRemoteRun) check403s(t *testing.T, n int) {
	t.Helper()
	want := fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s %s", resource_metadata="%s", error_description="The operation requires additional scope"`, baseScope, envScope, r.metaURL)
	u, _ := url.Parse(r.resource)
	got := r.pxLog.matching("POST", u.Path, http.StatusForbidden)
	ok := len(got) == n
	for _, e := range got {
		ok = ok && e.wwwAuth == want
	}
	if !ok {
		t.Errorf("403 answers = %+v, want %d with %s", got, n, want)
	}
}

// checkEnd checks that the client registered once, that the pages the
// browser finished answered 200, that mcp-remote started callbacks
// callback servers, and that echo still answers.
func (r *mcpRemoteRun) checkEnd(t *testing.T, callbacks int) {
	t.Helper()
	if n := len(r.asLog.matching("POST", "/register", 0)); n != 1 {
		t.Errorf("%d registrations, want the first only", n)
	}
	for _, p := range r.b.opened() {
		if p.done && p.err != "" {
			t.Errorf("browser: %s: %s", p.url, p.err)
		}
	}
	if n := r.c.countStderr(r.callbackLine()); n != callbacks {
		t.Errorf("%d callback servers started, want %d", n, callbacks)
	}
	if got := toolResultText(t, r.c.call(t, 5, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "and on"}})); !strings.Contains(got, "and on") {
		t.Errorf("echo at the end = %q", got)
	}
}

// checkAuthorizations checks that the authorization server got exactly
// one authorization request per scope in scopes, in order, each with PKCE
// S256, the resource and the client.
func checkAuthorizations(t *testing.T, asLog *serverLog, clientID, resource string, scopes ...string) {
	t.Helper()
	got := asLog.matching("GET", "/authorize", 0)
	if len(got) != len(scopes) {
		t.Errorf("%d authorization requests, want %d (scopes %q): %+v", len(got), len(scopes), scopes, got)
		return
	}
	for i, a := range got {
		q := a.query
		if q.Get("scope") != scopes[i] || q.Get("resource") != resource || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("client_id") != clientID || a.status != http.StatusFound {
			t.Errorf("authorization %d = %d %v, want scope %q, resource %s, PKCE S256, client %s, 302", i+1, a.status, q, scopes[i], resource, clientID)
		}
	}
}

// checkTokens checks that the authorization server issued exactly one
// token per scope in scopes, in order (authorization code grants).
func checkTokens(t *testing.T, asLog *serverLog, scopes ...string) {
	t.Helper()
	got := asLog.matching("POST", "/token", 0)
	if len(got) != len(scopes) {
		t.Errorf("%d token requests, want %d (scopes %q): %+v", len(got), len(scopes), scopes, got)
		return
	}
	for i, tok := range got {
		var body struct {
			AccessToken string `json:"access_token"`
			Scope       string `json:"scope"`
		}
		if err := json.Unmarshal([]byte(tok.body), &body); err != nil || tok.status != http.StatusOK || body.AccessToken == "" || body.Scope != scopes[i] {
			t.Errorf("token %d = %d scope %q (%v), want 200 with scope %q", i+1, tok.status, body.Scope, err, scopes[i])
		}
	}
}

// toolResultText is the text of a tools/call result, which must not be an
// error.
func toolResultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var res struct {
		IsError bool `json:"isError"`
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		t.Fatalf("tools/call result %s (%v)", raw, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// jsonRPCProc is a process spoken to in JSON-RPC lines on its stdin and
// stdout, as an MCP host speaks to a stdio server.
type jsonRPCProc struct {
	in      io.WriteCloser
	msgs    chan json.RawMessage
	mu      sync.Mutex
	lines   []string      // stderr
	changed chan struct{} // closed and replaced on each stderr line
}

func newJSONRPCProc() *jsonRPCProc {
	return &jsonRPCProc{msgs: make(chan json.RawMessage, 64), changed: make(chan struct{})}
}

// start starts cmd; when t ends, its stdin is closed (the end of its
// host) and it is waited for, killed after mcpRemoteTimeout.
func (p *jsonRPCProc) start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(p.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.msgs <- json.RawMessage(slices.Clone(sc.Bytes()))
		}
	}()
	go func() {
		defer close(done)
		sc := bufio.NewScanner(errp)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			if len(p.lines) < 10000 {
				p.lines = append(p.lines, sc.Text())
			}
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-done:
		case <-time.After(mcpRemoteTimeout):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
}

func (p *jsonRPCProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// countStderr is the number of stderr lines so far ending in suffix.
func (p *jsonRPCProc) countStderr(suffix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if strings.HasSuffix(l, suffix) {
			n++
		}
	}
	return n
}

// waitStderr waits until the process has written n stderr lines ending
// in suffix; it gives up after mcpRemoteTimeout or when ctx ends.
func (p *jsonRPCProc) waitStderr(ctx context.Context, suffix string, n int) error {
	timeout := time.NewTimer(mcpRemoteTimeout)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		count := p.countStderr(suffix)
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("%d lines ending in %q in %v, want %d", count, suffix, mcpRemoteTimeout, n)
		}
	}
}

func (p *jsonRPCProc) send(t *testing.T, msg map[string]any) {
	t.Helper()
	line, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		t.Fatalf("write %s: %v", line, err)
	}
}

func (p *jsonRPCProc) notify(t *testing.T, method string) {
	t.Helper()
	p.send(t, map[string]any{"jsonrpc": "2.0", "method": method})
}

// call sends a request and returns its result; an error answer fails t.
func (p *jsonRPCProc) call(t *testing.T, id int, method string, params any) json.RawMessage {
	t.Helper()
	result, rpcErr := p.request(t, id, method, params)
	if rpcErr != nil {
		t.Fatalf("%s: error %s; stderr:\n%s", method, rpcErr, p.stderr())
	}
	return result
}

// request sends a request and returns its result or error, skipping the
// messages before its answer; the end of the output or mcpRemoteTimeout
// without an answer fails t.
func (p *jsonRPCProc) request(t *testing.T, id int, method string, params any) (result, rpcErr json.RawMessage) {
	t.Helper()
	p.send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.NewTimer(mcpRemoteTimeout)
	defer timeout.Stop()
	for {
		select {
		case raw, ok := <-p.msgs:
			if !ok {
				t.Fatalf("%s: output ended without an answer; stderr:\n%s", method, p.stderr())
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s: output line %q: %v", method, raw, err)
			}
			if m.ID == nil || *m.ID != id || m.Method != "" {
				continue
			}
			return m.Result, m.Error
		case <-timeout.C:
			t.Fatalf("%s: no answer within %v; stderr:\n%s", method, mcpRemoteTimeout, p.stderr())
		}
	}
}

// getJSON decodes the JSON answer to a GET of u.
func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// fakeBrowser is the browser a desktop would open. Given a URL by the
// BROWSER script, it answers at once (the script exits, as xdg-open does
// once a browser has the URL) and then, as the page loads, follows the
// authorization server's redirects (its auto-approval) up to the one to
// the client's loopback callback, which it follows once the client's
// callback server is listening (ready), as a user's browser arrives there
// long after the client opened it. It records each URL and how the
// callback answered.
type fakeBrowser struct {
	url     string
	ready   func(ctx context.Context, n int) error // the callback server of the nth sign-in listens
	mu      sync.Mutex
	urls    []opened
	changed chan struct{} // closed and replaced when a page changes
	wg      sync.WaitGroup
}

// opened is a page the browser was given: its URL, the callback it was
// redirected to, whether its load ended and how (err "" when the
// callback answered 200).
type opened struct {
	url, callback, err string
	done               bool
}

func newFakeBrowser(t *testing.T, asHost string, ready func(ctx context.Context, n int) error) *fakeBrowser {
	t.Helper()
	b := &fakeBrowser{ready: ready, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Timeout: mcpRemoteTimeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != asHost || len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 16<<10))
		b.mu.Lock()
		b.urls = append(b.urls, opened{url: string(raw)})
		n := len(b.urls)
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			err := b.load(ctx, client, string(raw), n)
			b.note(n, func(o *opened) {
				o.done = true
				if err != nil {
					o.err = err.Error()
				}
			})
		}()
	}))
	t.Cleanup(func() { cancel(); ts.Close(); b.wg.Wait() })
	b.url = ts.URL
	return b
}

// load is the nth page load of u: the redirects to the callback, and the
// callback once ready.
func (b *fakeBrowser) load(ctx context.Context, client *http.Client, u string, n int) error {
	get := func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		return resp, nil
	}
	resp, err := get(u)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusFound {
		return fmt.Errorf("%s answered %d, want a redirect to the callback", resp.Request.URL, resp.StatusCode)
	}
	callback := resp.Header.Get("Location")
	b.note(n, func(o *opened) { o.callback = callback })
	if err := b.ready(ctx, n); err != nil {
		return err
	}
	if resp, err = get(callback); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the callback answered %d", resp.StatusCode)
	}
	return nil
}

// wait waits until ok holds for the pages so far; it gives up after
// mcpRemoteTimeout.
func (b *fakeBrowser) wait(ok func([]opened) bool) error {
	timeout := time.NewTimer(mcpRemoteTimeout)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		if ok(b.opened()) {
			return nil
		}
		select {
		case <-changed:
		case <-timeout.C:
			return fmt.Errorf("browser pages %+v after %v", b.opened(), mcpRemoteTimeout)
		}
	}
}

// note records a change of page n under b.mu.
func (b *fakeBrowser) note(n int, f func(o *opened)) {
	b.mu.Lock()
	f(&b.urls[n-1])
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *fakeBrowser) opened() []opened {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.urls)
}

// serverLog records what a test server answers, in the order it starts
// answering: each entry is recorded before its status line is written,
// and its body (the first 16 KiB) before the bytes are, so that a client
// that has read an answer finds it here.
type serverLog struct {
	mu sync.Mutex
	ex []*served
}

// served is one answered request.
type served struct {
	method, path string
	query        url.Values
	status       int
	wwwAuth      string
	body         string
}

// wrap returns h recording into l (h itself when l is nil).
func (l *serverLog) wrap(h http.Handler) http.Handler {
	if l == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&logWriter{ResponseWriter: w, l: l, r: r}, r)
	})
}

// matching returns copies of the entries with method and path (any
// status when status is 0).
func (l *serverLog) matching(method, path string, status int) []served {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []served
	for _, e := range l.ex {
		if e.method == method && e.path == path && (status == 0 || e.status == status) {
			out = append(out, *e)
		}
	}
	return out
}

// logWriter records its answer into l.
type logWriter struct {
	http.ResponseWriter
	l *serverLog
	r *http.Request
	e *served
}

func (w *logWriter) WriteHeader(status int) {
	if w.e == nil {
		w.e = &served{method: w.r.Method, path: w.r.URL.Path, query: w.r.URL.Query(), status: status, wwwAuth: w.Header().Get("WWW-Authenticate")}
		w.l.mu.Lock()
		w.l.ex = append(w.l.ex, w.e)
		w.l.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.e == nil {
		w.WriteHeader(http.StatusOK)
	}
	w.l.mu.Lock()
	if n := 16<<10 - len(w.e.body); n > 0 {
		w.e.body += string(p[:min(n, len(p))])
	}
	w.l.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

// Flush lets the proxy's event streams through.
func (w *logWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
