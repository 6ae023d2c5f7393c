package proxycmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/internal/heldport"
)

// syncBuf is a goroutine-safe buffer for the command's stderr.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return heldport.New(t, 1).Take()
}

// plainUpstream is a go-sdk MCP server with no authorization of its own,
// recording the Authorization header of each request.
func plainUpstream(t *testing.T) (url string, auth func() []string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	var mu sync.Mutex
	var seen []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestFlagsMode runs the README's command: the proxy in flags mode with
// the embedded development authorization server, in front of a go-sdk
// server; a go-sdk client with a development token calls a tool, the
// upstream gets the proxy's assertion, oversized request headers get 431
// without reaching it, and the command shuts down cleanly
// when its context ends.
func TestFlagsMode(t *testing.T) {
	upstream, auth := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-upstream", upstream, "-dev-as", devAddr, "-scopes", "mcp:tools"}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuf
	startedc := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, func(string) string { return "" }, &syncBuf{}, &stderr, func(s started) { startedc <- s })
	}()
	var st started
	select {
	case st = <-startedc:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not started")
	}
	if st.Resource != "http://"+addr+"/mcp" || st.Issuer != "http://"+devAddr {
		t.Errorf("started = %+v", st)
	}
	tok, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: st.Resource, HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "ping"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "pong" {
		t.Fatalf("CallTool = %v, %v", res, err)
	}
	cs.Close()
	// Request heads are bounded by exactly 64 KiB (docs/proxy.md): the
	// request line and header lines, each with its CRLF, and the empty
	// line. A head of exactly that passes, one byte more gets 431, and so
	// does a far larger one (net/http's own bound); the upstream never
	// sees a refused one. (The stateful upstream answers the sessionless
	// call itself: a 1 KiB head gets the same answer as the bound's.)
	seen := len(auth())
	small := rawHead(t, addr, tok, 1<<10)
	if small == http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("1 KiB head: status %d", small)
	}
	for _, tc := range []struct{ size, want int }{
		{64 << 10, small},
		{64<<10 + 1, http.StatusRequestHeaderFieldsTooLarge},
		{1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		if got := rawHead(t, addr, tok, tc.size); got != tc.want {
			t.Errorf("%d-byte head: status %d, want %d", tc.size, got, tc.want)
		}
	}
	if n := len(auth()); n != seen+2 {
		t.Errorf("the upstream received %d request(s) of the four, want the two within the bound", n-seen)
	}
	for _, a := range auth() {
		if !strings.HasPrefix(a, "Bearer ey") || strings.Contains(a, tok) {
			t.Errorf("upstream Authorization = %q, want the proxy's assertion", a)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no shutdown")
	}
	out := stderr.String()
	for _, want := range []string{`"msg":"mcp request"`, `"mcp_method":"tools/call"`, `"name":"(unlisted)"`, `"outcome":"authorized"`, `"status":200`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if strings.Contains(out, tok) {
		t.Error("the log holds the client's token")
	}
}

// rawHead sends, over a fresh connection, a 2026-07-28 tools/call of
// ping whose head (request line, header lines, empty line) is exactly
// size bytes, padded with an X-Pad field, and returns the answer's status.
func rawHead(t *testing.T, addr, tok string, size int) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + tok +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: ping\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n"
	pad := size - len(head) - len("X-Pad: \r\n\r\n")
	if pad < 0 {
		t.Fatalf("head of %d bytes without padding", len(head))
	}
	raw := head + "X-Pad: " + strings.Repeat("a", pad) + "\r\n\r\n"
	if len(raw) != size {
		t.Fatalf("head is %d bytes, want %d", len(raw), size)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A refused head may be answered before it is all written; the
	// answer is what counts.
	_, _ = io.WriteString(c, raw+body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%d-byte head: %v", size, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCheck: -check prints the effective policy and exits 0, or names the
// error and exits 1; usage errors exit 2.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(`routes:
  - resource: https://mcp.example.com/mcp
    upstream: http://127.0.0.1:3000/mcp
    issuers: [https://auth.example.com]
    scopes: [mcp:tools]
    operations:
      tools: {delete_repo: [repo:admin]}
      deny_unlisted: true
`), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("routes:\n  - resource: https://mcp.example.com/mcp\n    upstrem: x\n"), 0o600)
	rules := `routes:
  - resource: https://mcp.example.com/mcp
    upstream: http://127.0.0.1:3000/mcp
    issuers: [https://auth.example.com]
    policy:
      tenant_argument: tenant
      rules:
        - name: admins-delete
          tools: ["delete_*"]
          require_scopes: [admin]
          when: "!('admins' in claims.groups)"
`
	goodRules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(goodRules, []byte(rules), 0o600)
	badRule := filepath.Join(dir, "badrule.yaml")
	os.WriteFile(badRule, []byte(rules+`        - name: own-tenant
          deny_when: mcp.args.tenant != user.tennant
`), 0o600)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"good file", []string{"-check", "-wait-keys", "1ms", "-config", good}, 0, []string{
			"route https://mcp.example.com/mcp\n", "  upstream:          http://127.0.0.1:3000/mcp\n",
			"  identity:          assertion (iss https://mcp.example.com, aud http://127.0.0.1:3000/mcp, ttl 1m0s, header Authorization; JWK Set at /.well-known/jwks.json)\n",
			"  tool scopes:       \n      delete_repo: repo:admin\n", "  unlisted:          refused (deny_unlisted: terminal 403)\n",
			"  metadata:          /.well-known/oauth-protected-resource/mcp and /.well-known/oauth-protected-resource\n", "configuration OK",
		}, ""},
		{"bad file", []string{"-check", "-config", bad}, 1, nil, bad + `:3:5: routes[0].upstrem: unknown key "upstrem"`},
		{"rules", []string{"-check", "-wait-keys", "1ms", "-config", goodRules}, 0, []string{"configuration OK"}, ""},
		{"bad rule", []string{"-check", "-config", badRule}, 1, nil, `Rules["own-tenant"]: condition: ERROR: <input>:1:24: undefined field 'tennant'`},
		{"flags", []string{"-check", "-wait-keys", "0", "-upstream", "http://127.0.0.1:3000/mcp", "-issuer", "https://auth.example.com"}, 0,
			[]string{"route http://127.0.0.1:8080/mcp\n", "configuration OK"}, ""},
		{"warnings before the verdict", []string{"-check", "-wait-keys", "1ms", "-upstream", "http://127.0.0.1:3000/mcp", "-issuer", "https://auth.example.com", "-identity", "headers"}, 0,
			[]string{"warning: keys not loaded within -wait-keys 1ms: route http://127.0.0.1:8080/mcp: ",
				`warning: msg="proxy: identity mode headers: the upstream trusts plain X-Mcpguard-* headers; keep it reachable by the proxy only"`,
				"configuration OK ("}, ""},
		{"http issuer off loopback", []string{"-check", "-upstream", "http://127.0.0.1:3000/mcp", "-issuer", "http://auth.example.com"}, 1,
			nil, `routes[0].issuers[0] "http://auth.example.com": must be https, or http on a loopback host`},
		{"public addr without resource", []string{"-check", "-addr", ":8080", "-upstream", "http://127.0.0.1:3000/mcp", "-issuer", "https://auth.example.com"}, 1,
			nil, "-resource is required when -addr is not a loopback address"},
		{"headers mode off loopback", []string{"-check", "-upstream", "http://10.0.0.1:3000/mcp", "-issuer", "https://auth.example.com", "-identity", "headers"}, 1,
			nil, "plain identity headers are allowed only for a loopback or unix-socket upstream"},
		{"no upstream", []string{"-check", "-issuer", "https://auth.example.com"}, 1, nil, "-upstream is required"},
		{"config and flags", []string{"-config", good, "-upstream", "http://127.0.0.1:1/mcp"}, 2, nil, "-config replaces -upstream"},
		{"unknown flag", []string{"-bogus"}, 2, nil, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuf
			code := Run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			if i, j := strings.LastIndex(stdout.String(), "warning: "), strings.Index(stdout.String(), "configuration OK"); i > j {
				t.Errorf("a warning after the verdict:\n%s", stdout.String())
			}
			if tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}

// otlpCollector is an OTLP/HTTP collector: it records the span and metric
// names of every export.
type otlpCollector struct {
	mu      sync.Mutex
	spans   []string
	metrics []string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if proto.Unmarshal(b, &req) == nil {
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						c.spans = append(c.spans, s.Name)
					}
				}
			}
		}
	case "/v1/metrics":
		var req colmetric.ExportMetricsServiceRequest
		if proto.Unmarshal(b, &req) == nil {
			for _, rm := range req.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						c.metrics = append(c.metrics, m.Name)
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// TestOpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set, the command
// exports otelguard's traces (an mcpguard.authorize span per request)
// and metrics (decisions, validation, key refreshes) over OTLP/HTTP; the
// shutdown flushes them.
func TestOpenTelemetry(t *testing.T) {
	col := &otlpCollector{}
	cts := httptest.NewServer(col)
	t.Cleanup(cts.Close)
	upstream, _ := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-upstream", upstream, "-dev-as", devAddr}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": cts.URL}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuf
	startedc := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, func(k string) string { return env[k] }, &syncBuf{}, &stderr, func(s started) { startedc <- s })
	}()
	var st started
	select {
	case st = <-startedc:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not started")
	}
	tok, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, authz := range []string{"Bearer " + tok, ""} {
		req, _ := http.NewRequest("POST", st.Resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no shutdown")
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if n := strings.Count(strings.Join(col.spans, " "), "mcpguard.authorize"); n < 2 {
		t.Errorf("spans = %v, want an mcpguard.authorize span for each of the 2 requests", col.spans)
	}
	for _, m := range []string{"mcpguard.decisions", "mcpguard.validation.duration", "mcpguard.jwks.refreshes"} {
		if !slices.Contains(col.metrics, m) {
			t.Errorf("metrics = %v, want %s among them", col.metrics, m)
		}
	}
}
