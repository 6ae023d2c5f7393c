package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// upstreamsDir holds the Node upstreams (integration/upstreams, its own
// lockfile) and the Python one.
var upstreamsDir = filepath.Join("upstreams")

// requireUpstreamsNode is requireNode for integration/upstreams.
func requireUpstreamsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not on PATH"
	} else {
		for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/server-everything", "jose", "express"} {
			if _, err := os.Stat(filepath.Join(upstreamsDir, "node_modules", pkg, "package.json")); err != nil {
				missing = pkg + " is not installed in integration/upstreams/node_modules"
				break
			}
		}
	}
	if missing != "" {
		hint := "run `npm ci` in integration/upstreams (Node.js >= 20.19)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set, so this test may not skip): %s", missing, hint)
		}
		t.Skipf("%s: %s", missing, hint)
	}
	return node
}

// debianPython is the interpreter Debian's python3-jwt installs into.
const debianPython = "/usr/bin/python3"

// requirePythonJWT returns Debian's python3 when it imports jwt (PyJWT,
// python3-jwt) with its crypto backend, else skips (fails under CI).
func requirePythonJWT(t *testing.T) string {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import jwt, cryptography").Run(); err != nil {
		hint := "apt-get install python3-jwt python3-cryptography"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import jwt (CI is set, so this test may not skip): %s", debianPython, hint)
		}
		t.Skipf("%s cannot import jwt: %s", debianPython, hint)
	}
	return debianPython
}

var listeningRe = regexp.MustCompile(`listening on port (\d+)`)

// startProc starts a server process in dir and waits for "listening on
// port N" (or, with portEnv, starts it on a free port and waits for the
// port to answer); it is killed when t ends.
func startProc(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	portc := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if log.Len() < 8<<10 {
				log.WriteString(line + "\n")
			}
			if m := listeningRe.FindStringSubmatch(line); m != nil {
				select {
				case portc <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p := <-portc:
		return "http://127.0.0.1:" + p + "/mcp"
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v did not start", name, args)
	}
	return ""
}

// proxied is devas, the proxy and one upstream started by mk, given the
// proxy's JWK Set URL, assertion issuer and the upstream's audience.
type proxied struct {
	as       *devmint.Server
	resource string
	upstream string
	px       *proxy.Proxy
}

func newProxied(t *testing.T, mk func(jwksURL, issuer string) string) *proxied {
	t.Helper()
	return newProxiedWith(t, envConfig{}, mk)
}

// newProxiedWith is newProxied with the proxy route configured by cfg.
func newProxiedWith(t *testing.T, cfg envConfig, mk func(jwksURL, issuer string) string) *proxied {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	p := &proxied{resource: "http://" + pxTS.Listener.Addr().String() + "/mcp"}
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{p.resource}, Scopes: []string{baseScope}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	p.as = as
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	// The proxy's issuer is its origin (the default); its JWK Set is on
	// its listener, known before it starts.
	proxyIss := "http://" + pxTS.Listener.Addr().String()
	p.upstream = mk(proxyIss+"/.well-known/jwks.json", proxyIss)
	p.px = startProxy(t, pxTS, p.resource, p.upstream, issuer, cfg)
	return p
}

func (p *proxied) token(t *testing.T, sub string) string {
	t.Helper()
	tok, err := p.as.IssueToken(sub, "acme", "proxied-client", p.resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// forgedHeaders are what a client may add hoping the upstream trusts it.
var forgedHeaders = http.Header{
	"Cookie":             {"session=secret-cookie"},
	"X-Mcpguard-Subject": {"root"},
	"X-Forwarded-User":   {"root"},
	"X-Forwarded-For":    {"10.9.9.9"},
	"Dpop":               {"forged"},
}

type tokenRT struct {
	token string
	extra http.Header
}

func (b tokenRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	for k, v := range b.extra {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (p *proxied) connect(ctx context.Context, t *testing.T, tok string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "proxied-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{tok, forgedHeaders}}}, nil)
	if err != nil {
		t.Fatalf("Connect through the proxy: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// upstreamWho is the caller an upstream verified from the assertion.
type upstreamWho struct {
	Iss      string   `json:"iss"`
	Sub      string   `json:"sub"`
	ClientID string   `json:"client_id"`
	Tenant   string   `json:"tenant"`
	Scopes   []string `json:"scopes"`
}

func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("CallTool %s: %+v %v", name, res, contentText(res))
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// checkVerifiedCaller: the upstream's whoami names the client token's
// principal, asserted by the proxy.
func checkVerifiedCaller(ctx context.Context, t *testing.T, p *proxied, cs *mcp.ClientSession) {
	t.Helper()
	var who upstreamWho
	if err := json.Unmarshal([]byte(callText(ctx, t, cs, "whoami", nil)), &who); err != nil {
		t.Fatal(err)
	}
	if want := (upstreamWho{Iss: p.px.AssertionIssuer(), Sub: "alice", ClientID: "proxied-client", Tenant: "acme", Scopes: []string{baseScope}}); who.Iss != want.Iss ||
		who.Sub != want.Sub || who.ClientID != want.ClientID || who.Tenant != want.Tenant || !slices.Equal(who.Scopes, want.Scopes) {
		t.Errorf("upstream caller = %+v, want %+v", who, want)
	}
}

// checkRefusesClientToken: the upstream, called directly with the
// client's own token, refuses it.
func checkRefusesClientToken(t *testing.T, p *proxied, tok string) {
	t.Helper()
	req, _ := http.NewRequest("POST", p.upstream, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("upstream with the client's own token: %d, want 401", resp.StatusCode)
	}
}

// TestProxyTypeScriptUpstream: a TypeScript SDK server that verifies the
// proxy's assertion with jose serves the go-sdk client through the proxy;
// it sees the caller, never the client's token, cookie or forged identity
// headers, and refuses the client's token sent to it directly.
func TestProxyTypeScriptUpstream(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	p := newProxied(t, func(jwksURL, issuer string) string {
		// Without --audience the server expects its own URL, the route's
		// default audience.
		return startProc(t, upstreamsDir, nil, node, "ts-upstream.mjs", "--jwks", jwksURL, "--issuer", issuer)
	})
	ctx := testContext(t)
	tok := p.token(t, "alice")
	cs := p.connect(ctx, t, tok)
	checkVerifiedCaller(ctx, t, p, cs)
	var seen map[string]any
	if err := json.Unmarshal([]byte(callText(ctx, t, cs, "seen_headers", nil)), &seen); err != nil {
		t.Fatal(err)
	}
	for k, v := range seen {
		s := fmt.Sprint(v)
		if strings.Contains(s, tok) || strings.Contains(s, "secret") || strings.Contains(s, "root") || strings.Contains(s, "10.9.9.9") || k == "dpop" || k == "cookie" {
			t.Errorf("the TypeScript upstream received %s: %s", k, s)
		}
	}
	checkRefusesClientToken(t, p, tok)
}

// TestProxyTypeScriptUpstreamHeaderAllowList: 50 identity-looking
// request headers (tenants, users, assertions, tokens, impersonation,
// forwarding) sent with every request of a go-sdk session never reach the
// TypeScript SDK server behind the proxy; the headers it receives are the
// protocol's, the proxy's assertion and the route's forward_headers. With
// the proxy's former deny-list, 39 of them reached it.
func TestProxyTypeScriptUpstreamHeaderAllowList(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	p := newProxiedWith(t, envConfig{forwardHeaders: []string{"X-Request-Id"}}, func(jwksURL, issuer string) string {
		return startProc(t, upstreamsDir, nil, node, "ts-upstream.mjs", "--jwks", jwksURL, "--issuer", issuer)
	})
	ctx := testContext(t)
	tok := p.token(t, "alice")
	sent := http.Header{"X-Request-Id": {"req-1"}}
	for _, k := range identityLookalikes {
		sent[k] = []string{"intruder"}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "proxied-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{tok, sent}}}, nil)
	if err != nil {
		t.Fatalf("Connect through the proxy: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	var seen map[string]any
	if err := json.Unmarshal([]byte(callText(ctx, t, cs, "seen_headers", nil)), &seen); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"accept": true, "content-type": true, "content-length": true, "mcp-protocol-version": true,
		"mcp-session-id": true, "mcp-method": true, "mcp-name": true, "host": true, "x-request-id": true,
		"accept-encoding": true, // Go's transport, not the client
		"connection":      true, // Go's transport, hop by hop
	}
	for k, v := range seen {
		if s := fmt.Sprint(v); strings.Contains(s, "intruder") || strings.Contains(s, tok) || !allowed[k] {
			t.Errorf("the TypeScript upstream received %s: %s", k, s)
		}
	}
	if seen["x-request-id"] != "req-1" {
		t.Errorf("forward_headers: x-request-id = %v, want req-1", seen["x-request-id"])
	}
}

// identityLookalikes are 50 request headers that upstreams, frameworks
// and gateways trust as the caller's identity, tenant, credential or
// origin (the proxy's own tests send the same).
var identityLookalikes = []string{
	"X-Tenant-Id", "X-Tenant", "X-Org-Id", "X-Organization-Id", "X-Account-Id",
	"X-Auth-User", "X-Auth-Email", "X-Auth-Groups", "X-Auth-Roles", "X-Auth-Token",
	"X-Userinfo", "X-User-Info", "X-Jwt-Assertion", "X-Jwt-Payload", "X-Access-Token",
	"X-Id-Token", "X-Api-Key", "X-Apikey", "X-Consumer-Id", "X-Consumer-Username",
	"X-Credential-Identifier", "X-Authenticated-User", "X-Authenticated-Userid", "X-Authenticated-Scope", "X-Principal",
	"X-Roles", "X-Scopes", "X-Client-Id", "X-Client-Cert", "X-Ssl-Client-Cert",
	"X-Ssl-Client-Dn", "X-Client-Dn", "X-Envoy-Original-Path", "X-Envoy-Peer-Metadata", "X-Istio-Attributes",
	"X-Goog-Iap-Jwt-Assertion", "X-Amzn-Oidc-Identity", "X-Ms-Client-Principal-Name", "X-Forwarded-Email", "X-Forwarded-Preferred-Username",
	"X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded", "Impersonate-User",
	"Impersonate-Group", "Impersonate-Uid", "Cookie", "Proxy-Authorization", "X-Mcpguard-Subject",
}

// TestProxyPythonUpstream: an MCP server in Python's standard library that
// verifies the proxy's assertion with PyJWT (Debian's python3-jwt) serves
// the go-sdk client through the proxy, and refuses the client's own token.
func TestProxyPythonUpstream(t *testing.T) {
	python := requirePythonJWT(t)
	t.Parallel()
	p := newProxied(t, func(jwksURL, issuer string) string {
		return startProc(t, upstreamsDir, nil, python, "python_upstream.py", jwksURL, issuer)
	})
	ctx := testContext(t)
	tok := p.token(t, "alice")
	cs := p.connect(ctx, t, tok)
	checkVerifiedCaller(ctx, t, p, cs)
	checkRefusesClientToken(t, p, tok)
}

// TestProxyEverythingServer: the reference "everything" server
// (@modelcontextprotocol/server-everything, Streamable HTTP, stateful with
// resumable streams), which knows nothing of authorization, behind the
// proxy: the go-sdk client (with its standalone GET stream) lists and
// calls tools, each annotated by the proxy with its scopes, and a request
// without a token never reaches it.
func TestProxyEverythingServer(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	p := newProxied(t, func(string, string) string {
		return startProc(t, upstreamsDir, []string{"PORT=" + freePort(t)}, node, "everything-host.mjs")
	})
	ctx := testContext(t)
	cs := p.connect(ctx, t, p.token(t, "alice"))
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	names := []string{}
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		// The proxy annotates each tool with the scopes its call needs
		// (SEP-1488); the everything server knows nothing of them.
		if ss, ok := tl.Meta["securitySchemes"].([]any); !ok || len(ss) != 1 || ss[0].(map[string]any)["type"] != "oauth2" {
			t.Errorf("tool %s: _meta.securitySchemes = %v, want one oauth2 scheme", tl.Name, tl.Meta["securitySchemes"])
		}
	}
	if !slices.Contains(names, "echo") {
		t.Fatalf("tools = %v, want echo among them", names)
	}
	if got := callText(ctx, t, cs, "echo", map[string]any{"message": "through the proxy"}); !strings.Contains(got, "through the proxy") {
		t.Errorf("echo = %q", got)
	}
	req, _ := http.NewRequest("POST", p.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("tokenless request: %d, want 401", resp.StatusCode)
	}
}

// TestProxyMCPGoServer: an mcp-go server behind the proxy receives the
// proxy's assertion, never the client's token.
func TestProxyMCPGoServer(t *testing.T) {
	t.Parallel()
	s := mcpgoserver.NewMCPServer("mcp-go-upstream", "1")
	s.AddTool(mcpgomcp.NewTool("ping"), func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
		return mcpgomcp.NewToolResultText("pong"), nil
	})
	var seenAuth []string
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	h := mcpgoserver.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-mu
		seenAuth = append(seenAuth, r.Header.Get("Authorization"))
		mu <- struct{}{}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p := newProxied(t, func(string, string) string { return ts.URL + "/mcp" })
	ctx := testContext(t)
	tok := p.token(t, "alice")
	cs := p.connect(ctx, t, tok)
	if got := callText(ctx, t, cs, "ping", nil); got != "pong" {
		t.Errorf("ping = %q", got)
	}
	<-mu
	defer func() { mu <- struct{}{} }()
	if len(seenAuth) < 2 {
		t.Fatalf("upstream saw %d requests", len(seenAuth))
	}
	for _, a := range seenAuth {
		if a == "Bearer "+tok || !strings.HasPrefix(a, "Bearer ey") {
			t.Errorf("mcp-go upstream Authorization = %.40q…, want the proxy's assertion", a)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(nil)
	_, port, _ := strings.Cut(ts.Listener.Addr().String(), ":")
	ts.Close()
	return port
}

func contentText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
