package mcpguardcaddy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/internal/heldport"
	"github.com/mcpguard/mcpguard/internal/redistest"
)

// These tests build a real Caddy with the module (./cmd/caddy, go build
// into a temporary directory: no xcaddy, no download beyond go.sum's
// modules) and run it with `tls internal` on 127.0.0.1 in front of the
// reference everything server (integration/upstreams), the clients
// trusting Caddy's local CA from its data directory (XDG_DATA_HOME).

const (
	baseScope = "mcp:tools"
	echoScope = "mcp:echo"
	// redirectURI is the SDK client's redirect URI: nothing listens, the
	// fetcher reads the code from devas's redirect.
	redirectURI = "http://127.0.0.1/callback"
	// preregistered is a public client known to devas.
	preregistered = "caddy-test-client"
)

// caddyBin is the Caddy binary TestMain builds.
var caddyBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpguard-caddy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	caddyBin = filepath.Join(dir, "caddy")
	build := exec.Command("go", "build", "-o", caddyBin, "./cmd/caddy")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/caddy:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// upstreamsDir holds the Node upstreams, with their own lockfile.
var upstreamsDir = filepath.Join("..", "integration", "upstreams")

// requireNode returns node when it and the everything server are
// installed; it skips otherwise, or fails under CI.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "package.json")); err != nil {
		missing = "@modelcontextprotocol/server-everything is not installed in integration/upstreams/node_modules"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set, so this test may not skip): run npm ci in integration/upstreams", missing)
		}
		t.Skipf("%s: run npm ci in integration/upstreams", missing)
	}
	return node
}

// syncBuffer is a process's output, bounded.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 256<<10 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var everythingRe = regexp.MustCompile(`everything-host listening on 127\.0\.0\.1:(\d+)`)

// startEverything starts the reference everything server on a free
// loopback port and returns its MCP URL.
func startEverything(t *testing.T, node string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "everything-host.mjs")
	cmd.Dir = upstreamsDir
	cmd.Env = append(os.Environ(), "PORT=0")
	out, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	portc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := everythingRe.FindStringSubmatch(sc.Text()); m != nil {
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
		t.Fatal("the everything server did not start")
	}
	return ""
}

// freePort is a loopback port for a Caddy process, outside the ephemeral
// range (heldport): a port that a closed port-0 listener gave back could
// be taken by any outgoing connection on the machine before Caddy binds it.
func freePort(t *testing.T) string {
	t.Helper()
	_, p, _ := net.SplitHostPort(heldport.New(t, 1).Take())
	return p
}

// startAS starts devas (DCR, auto-approve) on loopback for resource.
func startAS(t *testing.T, resource string) (*devmint.Server, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	issuer := "http://" + ts.Listener.Addr().String()
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope, echoScope},
		AutoApprove: true, EnableDCR: true,
		Clients: []cimd.Client{{Document: cimd.Document{ClientID: preregistered, RedirectURIs: []string{redirectURI}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = as
	ts.Start()
	t.Cleanup(ts.Close)
	return as, issuer
}

// routeYAML is the proxy configuration of the tests: echo needs a scope
// beyond the base one, so that calling it asks for a step-up.
func routeYAML(resource, upstream, issuer, redisAddr string) string {
	y := fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%s]
    scopes: [%s]
    operations:
      tools:
        echo: [%s]
`, resource, upstream, issuer, baseScope, echoScope)
	if redisAddr != "" {
		y += "redis:\n  addr: " + redisAddr + "\n"
	}
	return y
}

// globalOptions keep Caddy to the test: no admin endpoint, no port 80, no
// system trust store, no saved config, no HTTP/3 (UDP); and the server
// timeouts of mcpguard proxy that docs/caddy.md gives.
const globalOptions = `{
	admin off
	auto_https disable_redirects
	skip_install_trust
	persist_config off
	servers {
		protocols h1 h2
		timeouts {
			read_header 10s
			read_body 30s
			write 30s
			idle 2m
		}
	}
}
`

// site is a Caddyfile site on 127.0.0.1:port with tls internal, the
// mcpguard directive given, and a 418 for whatever mcpguard does not
// serve.
func site(port, directive string) string {
	return fmt.Sprintf(`https://127.0.0.1:%s {
	bind 127.0.0.1
	tls internal
	%s
	respond "not mcpguard's" 418
}
`, port, directive)
}

// inline is the mcpguard directive with the YAML inline in a heredoc.
func inline(yml string) string {
	var b strings.Builder
	b.WriteString("mcpguard {\n\t\tconfig <<YAML\n")
	for _, l := range strings.Split(strings.TrimRight(yml, "\n"), "\n") {
		b.WriteString("\t\t" + l + "\n")
	}
	b.WriteString("\t\tYAML\n\t}")
	return b.String()
}

// caddyData is a data directory shared by the instances of a test, so
// that they share the local CA the client trusts.
type caddyData struct {
	dir string
}

func (d caddyData) rootCA() string {
	return filepath.Join(d.dir, "caddy", "pki", "authorities", "local", "root.crt")
}

// client returns an HTTP client trusting only Caddy's local CA.
func (d caddyData) client(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(d.rootCA())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in Caddy's root.crt")
	}
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true},
		Timeout:   30 * time.Second,
	}
}

// startCaddy runs the Caddy binary with config (adapter "caddyfile" or
// "json") and waits until https://127.0.0.1:port/healthz, served by the
// module, answers over TLS with Caddy's certificate.
func startCaddy(t *testing.T, d caddyData, port, adapter, config string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config."+adapter)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"run", "--config", path}
	if adapter != "json" {
		args = append(args, "--adapter", adapter)
	}
	cmd := exec.CommandContext(ctx, caddyBin, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+d.dir, "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("caddy on %s:\n%s", port, logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-exited:
			t.Fatalf("caddy exited:\n%s", logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := os.Stat(d.rootCA()); err == nil {
			resp, err := d.client(t).Get("https://127.0.0.1:" + port + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return
				}
			}
		}
		if i >= 600 || time.Now().After(deadline) {
			t.Fatalf("caddy on %s did not serve /healthz over TLS:\n%s", port, logs.String())
		}
	}
}

// fetcher plays the browser for the SDK client: devas auto-approves and
// redirects to the redirect URI, whose code, state and iss it returns.
func fetcher(t *testing.T) auth.AuthorizationCodeFetcher {
	browser := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		resp, err := browser.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return nil, fmt.Errorf("authorization: status %d", resp.StatusCode)
		}
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		q := loc.Query()
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("authorization error %s", e)
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// step is one request of the client to the MCP endpoint.
type step struct {
	status int
	www    string
}

// traceRT records the MCP endpoint's answers.
type traceRT struct {
	base     http.RoundTripper
	endpoint string
	mu       *sync.Mutex
	steps    *[]step
}

func (tr traceRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := tr.base.RoundTrip(r)
	if err == nil && r.URL.String() == tr.endpoint && r.Method == http.MethodPost {
		tr.mu.Lock()
		*tr.steps = append(*tr.steps, step{resp.StatusCode, resp.Header.Get("Www-Authenticate")})
		tr.mu.Unlock()
	}
	return resp, err
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCaddyTLS: Caddy with the module (Caddyfile, the route's YAML inline)
// and tls internal in front of the everything server: the 401 challenge
// and the RFC 9728 metadata name https URLs; a path mcpguard does not
// serve reaches the next handler; the go-sdk client and the TypeScript
// SDK client (integration/node) each register, are refused 403
// insufficient_scope for echo, step up and call it.
func TestCaddyTLS(t *testing.T) {
	node := requireNode(t)
	upstream := startEverything(t, node)
	port := freePort(t)
	origin := "https://127.0.0.1:" + port
	resource := origin + "/mcp"
	_, issuer := startAS(t, resource)
	d := caddyData{dir: t.TempDir()}
	startCaddy(t, d, port, "caddyfile", globalOptions+site(port, inline(routeYAML(resource, upstream, issuer, ""))))
	hc := d.client(t)
	prmURL := origin + "/.well-known/oauth-protected-resource/mcp"

	t.Run("challenge", func(t *testing.T) {
		req, _ := http.NewRequest("POST", resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := `Bearer scope="` + baseScope + `", resource_metadata="` + prmURL + `"`
		if resp.StatusCode != 401 || resp.Header.Get("Www-Authenticate") != want {
			t.Errorf("tokenless POST: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("Www-Authenticate"), want)
		}
		if resp.TLS == nil || resp.ProtoMajor != 2 {
			t.Errorf("answer over %s, TLS %v: want HTTP/2 over TLS", resp.Proto, resp.TLS != nil)
		}
	})
	t.Run("metadata", func(t *testing.T) {
		resp, err := hc.Get(prmURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || resp.StatusCode != 200 {
			t.Fatalf("metadata: %d %v", resp.StatusCode, err)
		}
		if md.Resource != resource || !slices.Equal(md.AuthorizationServers, []string{issuer}) ||
			!slices.Contains(md.ScopesSupported, baseScope) || !slices.Contains(md.ScopesSupported, echoScope) {
			t.Errorf("metadata = %+v, want resource %s, authorization_servers [%s], scopes %s and %s", md, resource, issuer, baseScope, echoScope)
		}
	})
	t.Run("next", func(t *testing.T) {
		resp, err := hc.Get(origin + "/index.html")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 418 || string(b) != "not mcpguard's" {
			t.Errorf("GET /index.html: %d %q, want the next handler's 418", resp.StatusCode, b)
		}
	})
	// The go-sdk client registers anew (DCR) at each authorization, so a
	// step-up gives it another client_id, another principal, whose
	// session binding refuses the session (404): registration is shown
	// alone, and the step-up with a pre-registered client.
	t.Run("registration", func(t *testing.T) {
		steps := sdkClient(t, hc, resource, &auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
				Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "caddy test", RedirectURIs: []string{redirectURI}},
			},
		}, false)
		// After the 401 the SDK probes server/discover, which the
		// everything server answers 400, then initializes.
		if len(steps) < 2 || steps[0].status != 401 || !slices.ContainsFunc(steps[1:], func(s step) bool { return s.status == 200 }) ||
			slices.ContainsFunc(steps[1:], func(s step) bool { return s.status == 401 || s.status == 403 }) {
			t.Errorf("MCP answers %+v: want 401, then answers after registration and authorization, none 401 or 403", steps)
		}
	})
	t.Run("step-up", func(t *testing.T) {
		steps := sdkClient(t, hc, resource, &auth.AuthorizationCodeHandlerConfig{
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: preregistered},
			RedirectURL:         redirectURI,
		}, true)
		var statuses []int
		stepUp := -1
		for i, s := range steps {
			statuses = append(statuses, s.status)
			if s.status == 403 {
				stepUp = i
			}
		}
		if len(steps) == 0 || steps[0].status != 401 {
			t.Fatalf("MCP answers %v: want a first 401", statuses)
		}
		if stepUp < 0 || !strings.Contains(steps[stepUp].www, `error="insufficient_scope"`) ||
			!strings.Contains(steps[stepUp].www, `resource_metadata="`+prmURL+`"`) ||
			!strings.Contains(steps[stepUp].www, echoScope) {
			t.Fatalf("MCP answers %v, challenges %+v: want a 403 insufficient_scope naming %s", statuses, steps, echoScope)
		}
		if stepUp+1 >= len(steps) || steps[stepUp+1].status != 200 {
			t.Errorf("MCP answers %v: want 200 for the retried call after the step-up", statuses)
		}
	})
	// The TypeScript SDK client, trusting Caddy's CA (NODE_EXTRA_CA_CERTS),
	// registers (DCR), keeps its client across the step-up, and so one
	// session: 401, registration, 403 insufficient_scope naming the echo
	// scope, a second authorization with it, the call.
	t.Run("typescript", func(t *testing.T) {
		requireDriver(t)
		r := tsClient(t, node, d, resource, "through caddy")
		var got []string
		for _, s := range r.Trace {
			switch {
			case s.URL == resource && s.Method == "POST" && (s.Status == 401 || s.Status == 403):
				got = append(got, fmt.Sprintf("%d %s", s.Status, s.WWWAuthenticate))
			case strings.HasSuffix(s.URL, "/register") && s.Status == 201:
				got = append(got, "registered")
			}
		}
		want := []string{
			`401 Bearer scope="` + baseScope + `", resource_metadata="` + prmURL + `"`,
			"registered",
			`403 Bearer error="insufficient_scope", scope="` + baseScope + " " + echoScope + `", resource_metadata="` + prmURL + `", error_description="The operation requires additional scope"`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("refusals and registration %q, want %q", got, want)
		}
		var scopes []string
		for _, a := range r.Authorizations {
			scopes = append(scopes, a.Scope)
		}
		if !slices.Equal(scopes, []string{baseScope, baseScope + " " + echoScope}) {
			t.Errorf("authorizations with scopes %q, want %s, then the step-up", scopes, baseScope)
		}
		if r.Call.IsError || r.Call.Text != "Echo: through caddy" {
			t.Errorf("echo after the step-up = %+v", r.Call)
		}
	})
}

// nodeDir holds the TypeScript SDK clients' driver, with its own lockfile.
var nodeDir = filepath.Join("..", "integration", "node")

// requireDriver skips, or fails under CI, when the TypeScript SDK client
// of integration/node is not installed.
func requireDriver(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK is not installed in integration/node (CI is set, so this test may not skip): run npm ci there")
		}
		t.Skip("the TypeScript SDK is not installed: run npm ci in integration/node")
	}
}

// tsClient runs the TypeScript SDK client (integration/node/driver.mjs,
// SDK v1) against resource, trusting Caddy's local CA, to call echo with
// message; it returns the client's report.
func tsClient(t *testing.T, node string, d caddyData, resource, message string) tsReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args, _ := json.Marshal(map[string]string{"message": message})
	cmd := exec.CommandContext(ctx, node, "driver.mjs", "--sdk", "v1", "--url", resource, "--tool", "echo", "--args", string(args))
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+d.rootCA())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r tsReport
	if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || !r.OK {
		t.Fatalf("driver.mjs: %v %v, error %q\nstdout: %s\nstderr: %s", err, jerr, r.Error, out, stderr.String())
	}
	return r
}

// tsReport is what driver.mjs prints.
type tsReport struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Trace []struct {
		Method, URL     string
		Status          int
		WWWAuthenticate string `json:"wwwAuthenticate"`
	} `json:"trace"`
	Authorizations []struct{ Scope string } `json:"authorizations"`
	Call           struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"call"`
}

// sdkClient connects the go-sdk client with cfg's authorization, lists
// the tools and, with echo, calls echo; it returns the MCP endpoint's
// answers to its POSTs.
func sdkClient(t *testing.T, hc *http.Client, resource string, cfg *auth.AuthorizationCodeHandlerConfig, echo bool) []step {
	t.Helper()
	ctx := testContext(t)
	var mu sync.Mutex
	var steps []step
	cfg.AuthorizationCodeFetcher = fetcher(t)
	cfg.Client = hc
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "caddy-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:     resource,
		HTTPClient:   &http.Client{Transport: traceRT{base: hc.Transport, endpoint: resource, mu: &mu, steps: &steps}},
		OAuthHandler: h,
	}, nil)
	if err != nil {
		t.Fatalf("Connect through Caddy: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "echo" }) {
		t.Fatalf("tools/list has no echo")
	}
	if echo {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through caddy"}})
		if err != nil {
			t.Fatalf("CallTool echo: %v", err)
		}
		if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through caddy") {
			t.Errorf("echo = %+v", res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(steps)
}

// post sends one JSON-RPC message to an MCP endpoint and returns the
// status, the session ID header and the body.
func post(t *testing.T, hc *http.Client, endpoint, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// jsonSite is the JSON configuration of a Caddy serving the module with
// its configuration inline as a JSON object (the YAML schema's keys) on
// 127.0.0.1:port with the local CA, and 418 for the rest.
func jsonSite(port string, cfg map[string]any) string {
	b, _ := json.Marshal(map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"apps": map[string]any{
			"http": map[string]any{"servers": map[string]any{"mcp": map[string]any{
				"listen":          []string{"127.0.0.1:" + port},
				"protocols":       []string{"h1", "h2"},
				"automatic_https": map[string]any{"disable_redirects": true},
				"routes": []any{map[string]any{
					"match": []any{map[string]any{"host": []string{"127.0.0.1"}}},
					"handle": []any{
						map[string]any{"handler": "mcpguard", "config": cfg},
						map[string]any{"handler": "static_response", "status_code": 418, "body": "not mcpguard's"},
					},
				}},
			}}},
			"pki": map[string]any{"certificate_authorities": map[string]any{"local": map[string]any{"install_trust": false}}},
			"tls": map[string]any{"automation": map[string]any{"policies": []any{map[string]any{
				"subjects": []string{"127.0.0.1"}, "issuers": []any{map[string]any{"module": "internal"}},
			}}}},
		},
	})
	return string(b)
}

// TestCaddyRedisSessions: two Caddy instances, one configured by a
// Caddyfile naming the YAML file, the other by JSON holding the same
// configuration as an object, share session owners through Redis: a
// session alice opened through the first serves her through the second,
// and is another principal's 404 through both.
func TestCaddyRedisSessions(t *testing.T) {
	node := requireNode(t)
	rs := redistest.Start(t)
	upstream := startEverything(t, node)
	portA, portB := freePort(t), freePort(t)
	// One public resource, as behind a load balancer; the test reaches
	// each instance on its own port.
	resource := "https://127.0.0.1:" + portA + "/mcp"
	as, issuer := startAS(t, resource)
	d := caddyData{dir: t.TempDir()}
	yml := routeYAML(resource, upstream, issuer, rs.Addr)
	file := filepath.Join(t.TempDir(), "mcpguard.yaml")
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	startCaddy(t, d, portA, "caddyfile", globalOptions+site(portA, "mcpguard {\n\t\tconfig_file "+file+"\n\t}"))
	cfg := map[string]any{
		"routes": []any{map[string]any{
			"resource": resource, "upstream": upstream, "issuers": []string{issuer}, "scopes": []string{baseScope},
			"operations": map[string]any{"tools": map[string]any{"echo": []string{echoScope}}},
		}},
		"redis": map[string]any{"addr": rs.Addr},
	}
	startCaddy(t, d, portB, "json", jsonSite(portB, cfg))
	hc := d.client(t)
	a, b := resource, "https://127.0.0.1:"+portB+"/mcp"
	mint := as
	alice, err := mint.IssueToken("alice", "acme", "caddy-client", resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := mint.IssueToken("bob", "acme", "caddy-client", resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	status, sid, body := post(t, hc, a, alice, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"caddy-test","version":"1"}}}`)
	if status != 200 || sid == "" {
		t.Fatalf("initialize through A: %d session %q %s", status, sid, body)
	}
	if status, _, body := post(t, hc, a, alice, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("initialized through A: %d %s", status, body)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tc := range []struct {
		name, endpoint, token string
		want                  int
	}{
		{"alice through B", b, alice, 200},
		{"alice through A", a, alice, 200},
		{"bob through B", b, bob, 404},
		{"bob through A", a, bob, 404},
	} {
		status, _, body := post(t, hc, tc.endpoint, tc.token, sid, list)
		if status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
		}
		if status == 200 && !strings.Contains(body, `"echo"`) {
			t.Errorf("%s: tools/list without echo: %s", tc.name, body)
		}
	}
}
