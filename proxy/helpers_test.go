package proxy_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const (
	baseScope  = "mcp:tools"
	adminScope = "mcp:admin"
	testClient = "proxy-test-client"
)

// headerLog records the headers of every request an upstream received.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Clone())
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.seen...)
}

// testEnv is an authorization server (devas), a go-sdk upstream that
// verifies the proxy's assertion with mcpguard, and the proxy in front of
// it, all on loopback.
type testEnv struct {
	as          *devmint.Server
	issuer      string
	resource    string // the proxy's public MCP URL
	proxyURL    string // the proxy's origin
	upstreamURL string
	px          *proxy.Proxy
	upstream    *headerLog
	proxyTS     *httptest.Server
}

type envOptions struct {
	// route adjusts the route before the proxy is built.
	route func(r *proxy.Route)
	// cfg adjusts the proxy config.
	cfg func(c *proxy.Config)
	// upstream replaces the go-sdk upstream handler (given the proxy's
	// JWKS URL and issuer).
	upstream func(t *testing.T, jwksURL, issuer, audience string) http.Handler
	// stateless serves the go-sdk upstream statelessly.
	stateless bool
	// listener, if set, wraps the upstream's listener.
	listener func(net.Listener) net.Listener
}

func newTestEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	upTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	e := &testEnv{
		issuer:      "http://" + asTS.Listener.Addr().String(),
		proxyURL:    "http://" + pxTS.Listener.Addr().String(),
		upstreamURL: "http://" + upTS.Listener.Addr().String() + "/mcp",
		upstream:    &headerLog{},
		proxyTS:     pxTS,
	}
	e.resource = e.proxyURL + "/mcp"
	as, err := devmint.New(devas.Config{
		Issuer: e.issuer, Resources: []string{e.resource, e.upstreamURL}, Scopes: []string{baseScope, adminScope},
		AutoApprove: true, EnableDCR: true,
	})
	if err != nil {
		t.Fatalf("devas.New: %v", err)
	}
	e.as = as
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	rt := proxy.Route{Resource: e.resource, Upstream: e.upstreamURL, Issuers: []string{e.issuer}, Scopes: []string{baseScope},
		Operations: proxy.Operations{Tools: map[string][]string{"admin_only": {adminScope}}},
		Validation: proxy.Validation{TenantClaim: "tenant"}}
	if o.route != nil {
		o.route(&rt)
	}
	cfg := proxy.Config{Routes: []proxy.Route{rt}, Timeouts: proxy.Timeouts{IdleStream: 10 * time.Second}}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	e.px = px
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)

	mk := o.upstream
	if mk == nil {
		mk = func(t *testing.T, jwksURL, issuer, audience string) http.Handler {
			return goSDKUpstream(t, jwksURL, issuer, audience, o.stateless)
		}
	}
	if o.listener != nil {
		upTS.Listener = o.listener(upTS.Listener)
	}
	upTS.Config.Handler = e.upstream.wrap(mk(t, e.proxyURL+px.JWKSPath(), px.AssertionIssuer(), e.upstreamURL))
	upTS.Start()
	t.Cleanup(upTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return e
}

// whoami is what the upstream's whoami tool reports: the principal it
// verified from the proxy's assertion.
type whoami struct {
	Issuer   string   `json:"iss"`
	Subject  string   `json:"sub"`
	ClientID string   `json:"client_id"`
	Tenant   string   `json:"tenant"`
	Scopes   []string `json:"scopes"`
}

// goSDKUpstream is an MCP server of the official Go SDK, protected by
// mcpguard configured to trust only the proxy's assertions (the Go
// snippet of docs/proxy.md).
func goSDKUpstream(t *testing.T, jwksURL, issuer, audience string, stateless bool) http.Handler {
	t.Helper()
	keys, err := jwks.New(jwks.Config{Issuer: issuer, JWKSURL: jwksURL})
	if err != nil {
		t.Fatalf("jwks.New: %v", err)
	}
	t.Cleanup(func() { keys.Close() })
	g, err := mcpguard.New(mcpguard.Config{
		Resource: audience,
		Issuers:  []string{issuer},
		Keys:     map[string]validate.KeySource{issuer: keys},
		Validate: validate.Config{TenantClaim: "tenant"},
	})
	if err != nil {
		t.Fatalf("upstream mcpguard.New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
	if err != nil {
		t.Fatalf("gosdk.New: %v", err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	a.Install(s)
	who := func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, ok := gosdk.Principal(req)
		if !ok {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no principal"}}}, nil, nil
		}
		b, _ := json.Marshal(whoami{p.Issuer, p.Subject, p.ClientID, p.Tenant, p.Scopes})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, who)
	mcp.AddTool(s, &mcp.Tool{Name: "admin_only"}, who)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	return a.Handler(h)
}

// bearerRT adds a fixed Authorization header (and extra headers).
type bearerRT struct {
	token string
	extra http.Header
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	for k, v := range b.extra {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (e *testEnv) token(t *testing.T, subject string, scopes ...string) string {
	t.Helper()
	tok, err := e.as.IssueToken(subject, "acme", testClient, e.resource, scopes)
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

// connect opens a go-sdk client session through the proxy with token.
func (e *testEnv) connect(ctx context.Context, t *testing.T, token string, extra http.Header) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.resource, HTTPClient: &http.Client{Transport: bearerRT{token, extra}},
	}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callWhoami(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string) whoami {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	if err != nil {
		t.Fatalf("CallTool %s: %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("CallTool %s: %+v", tool, res)
	}
	var w whoami
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &w); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	return w
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// do sends one raw request to the proxy.
func do(t *testing.T, method, url, body string, hdr http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}
