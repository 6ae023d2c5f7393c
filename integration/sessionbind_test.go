package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgotypes "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// Issue #21: the middleware itself binds every MCP session to the
// principal that created it, whatever server sits behind it and without
// any adapter. Each server here is mounted the obvious way, with no
// mcpguard adapter, and keeps per-session memory: a "remember" tool
// stores a text in the session, "recall" answers it.

// bindServer is a guarded MCP server on loopback.
type bindServer struct {
	url string
	iss *authtest.Issuer
}

// newBindServer serves, at /mcp of a loopback server, the handler mk
// returns for the guard g (built for that URL) or for its middleware.
func newBindServer(t *testing.T, mk func(t *testing.T, g *mcpguard.Guard, mux *http.ServeMux), mutate func(*mcpguard.Config)) *bindServer {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	cfg := mcpguard.Config{
		Resource: resource,
		Issuers:  []string{iss.URL},
		Keys:     map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}},
		Scopes:   []string{baseScope},
		Validate: validate.Config{TenantClaim: "tenant", Now: iss.Now},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := mcpguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	mux := http.NewServeMux()
	mk(t, g, mux)
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &bindServer{url: resource, iss: iss}
}

func (s *bindServer) token(t *testing.T, sub, tenant string) string {
	t.Helper()
	return s.iss.Token(t, authtest.Token{Subject: sub, Tenant: tenant, Scopes: []string{baseScope}})
}

type bindAnswer struct {
	status int
	header http.Header
	body   string
}

// send makes one request (body "" for none) with token ("" for none) and
// session ID sid ("" for none); it reads at most 64 KiB of the answer
// within 2 seconds, so that an event stream that opens is seen, not
// waited for.
func (s *bindServer) send(t *testing.T, method, token, sid, body string) bindAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", rev20251125)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&b, io.LimitReader(resp.Body, 64<<10))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // an open stream (only a failing case: no test expects one)
		resp.Body.Close()
		<-done
	}
	return bindAnswer{resp.StatusCode, resp.Header, b.String()}
}

func rpcCall(id int, tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

const (
	bindInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bind-test","version":"0"}}}`
	bindInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// open initializes a session for token and returns its ID.
func (s *bindServer) open(t *testing.T, token string) string {
	t.Helper()
	a := s.send(t, http.MethodPost, token, "", bindInit)
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", a.status, sid, a.body)
	}
	if a := s.send(t, http.MethodPost, token, sid, bindInitialized); a.status/100 != 2 {
		t.Fatalf("notifications/initialized: %d %s", a.status, a.body)
	}
	return sid
}

// checkBinding: alice (tenant-a) opens a session and stores a secret in
// it; bob (tenant-b), with his own valid token, presents her session ID
// on POST (recall), GET (her stream) and DELETE: each gets 404 without a
// byte of her session, and her session keeps working until she ends it.
func checkBinding(t *testing.T, s *bindServer) {
	t.Helper()
	alice, bob := s.token(t, "alice", "tenant-a"), s.token(t, "bob", "tenant-b")
	sid := s.open(t, alice)
	const secret = "alice-secret-4711"
	if a := s.send(t, http.MethodPost, alice, sid, rpcCall(2, "remember", `{"text":"`+secret+`"}`)); a.status != http.StatusOK {
		t.Fatalf("alice's remember: %d %s", a.status, a.body)
	}
	for _, tc := range []struct{ name, method, body string }{
		{"POST", http.MethodPost, rpcCall(3, "recall", `{}`)},
		{"GET", http.MethodGet, ""},
		{"DELETE", http.MethodDelete, ""},
	} {
		a := s.send(t, tc.method, bob, sid, tc.body)
		if a.status != http.StatusNotFound || strings.Contains(a.body, secret) || strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("bob's %s in alice's session: %d %q %s, want 404 without her data", tc.name, a.status, a.header.Get("Content-Type"), a.body)
		}
	}
	if a := s.send(t, http.MethodPost, alice, sid, rpcCall(4, "recall", `{}`)); a.status != http.StatusOK || !strings.Contains(a.body, secret) {
		t.Fatalf("alice's recall after bob's attempts: %d %s", a.status, a.body)
	}
	if a := s.send(t, http.MethodDelete, alice, sid, ""); a.status/100 != 2 {
		t.Fatalf("alice's DELETE: %d %s", a.status, a.body)
	}
	if a := s.send(t, http.MethodPost, alice, sid, rpcCall(5, "recall", `{}`)); a.status != http.StatusNotFound {
		t.Errorf("alice's recall after her DELETE: %d %s, want 404", a.status, a.body)
	}
}

// sessionMemory is per-session text, keyed by a session identity.
type sessionMemory struct {
	mu sync.Mutex
	m  map[any]string
}

func (s *sessionMemory) set(k any, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[any]string{}
	}
	s.m[k] = v
}

func (s *sessionMemory) get(k any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

// goSDKRememberServer is a go-sdk server with remember and recall.
func goSDKRememberServer() *mcp.Server {
	var mem sessionMemory
	s := mcp.NewServer(&mcp.Implementation{Name: "bind-gosdk", Version: "0"}, nil)
	type rememberArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "remember"}, func(_ context.Context, req *mcp.CallToolRequest, in rememberArgs) (*mcp.CallToolResult, any, error) {
		mem.set(req.Session, in.Text)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "recall"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: mem.get(req.Session)}}}, nil, nil
	})
	return s
}

// TestSessionBindingGoSDKDefaultMount: the go-sdk's default (stateful)
// handler through Guard.Mount, no adapter.
func TestSessionBindingGoSDKDefaultMount(t *testing.T) {
	t.Parallel()
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		srv := goSDKRememberServer()
		g.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}, nil)
	checkBinding(t, s)
}

// mcpgoRememberServer is an mcp-go StreamableHTTPServer, default
// (stateful) options, with remember and recall.
func mcpgoRememberServer() http.Handler {
	var mem sessionMemory
	ms := mcpgoserver.NewMCPServer("bind-mcpgo", "0")
	ms.AddTool(mcpgotypes.NewTool("remember", mcpgotypes.WithString("text")), func(ctx context.Context, req mcpgotypes.CallToolRequest) (*mcpgotypes.CallToolResult, error) {
		mem.set(mcpgoserver.ClientSessionFromContext(ctx).SessionID(), req.GetString("text", ""))
		return mcpgotypes.NewToolResultText("ok"), nil
	})
	ms.AddTool(mcpgotypes.NewTool("recall"), func(ctx context.Context, _ mcpgotypes.CallToolRequest) (*mcpgotypes.CallToolResult, error) {
		return mcpgotypes.NewToolResultText(mem.get(mcpgoserver.ClientSessionFromContext(ctx).SessionID())), nil
	})
	return mcpgoserver.NewStreamableHTTPServer(ms)
}

// TestSessionBindingMCPGoNoAdapter: mcp-go's default (stateful) server
// behind the plain middleware (Guard.Mount), no adapter.
func TestSessionBindingMCPGoNoAdapter(t *testing.T) {
	t.Parallel()
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		g.Mount(mux, mcpgoRememberServer())
	}, nil)
	checkBinding(t, s)
}

// TestSessionBindingTypeScriptServer: the TypeScript SDK's stateful
// Streamable HTTP server (integration/node/ts-server.mjs, from the
// lockfile), in another process, behind Middleware.Handler around a
// reverse proxy.
func TestSessionBindingTypeScriptServer(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	upstream := startProc(t, nodeDir, nil, node, "ts-server.mjs")
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.URL.Path = u.Path
				pr.Out.Header.Del("Authorization")
			},
			FlushInterval: -1,
		}
		inserted, root := g.Middleware().MetadataPaths()
		mux.Handle(inserted, g.Middleware().MetadataHandler())
		mux.Handle(root, g.Middleware().MetadataHandler())
		mux.Handle("/mcp", g.Middleware().Handler(rp))
	}, nil)
	checkBinding(t, s)
}

// goSDKSessions counts the go-sdk server's live sessions.
func goSDKSessions(s *mcp.Server) map[string]bool {
	out := map[string]bool{}
	for ss := range s.Sessions() {
		out[ss.ID()] = true
	}
	return out
}

// TestSessionFloodAndExpiryGoSDK: the go-sdk's default handler through
// Guard.Mount with a bound of 20 sessions. 10× the bound of sessions from
// one principal, and as many anonymous ones, leave a victim's session
// working, and the evicted ones are closed in the go-sdk (its live
// sessions stay within the bound); an idle session expires and is closed
// in the go-sdk too.
func TestSessionFloodAndExpiryGoSDK(t *testing.T) {
	t.Parallel()
	const bound = 20
	srv := goSDKRememberServer()
	s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
		g.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}, func(c *mcpguard.Config) {
		c.Operations.Public.Methods = []string{"initialize", "notifications/initialized"}
		c.Middleware.Sessions = middleware.SessionConfig{Max: bound, PerPrincipal: 3, Anonymous: 3, IdleTimeout: time.Hour}
	})
	victim := s.token(t, "victim", "tenant-v")
	sid := s.open(t, victim)
	mallory := s.token(t, "mallory", "tenant-m")
	for i := 0; i < 10*bound; i++ {
		s.open(t, mallory)
		s.open(t, "")
	}
	if a := s.send(t, http.MethodPost, victim, sid, rpcCall(2, "recall", `{}`)); a.status != http.StatusOK {
		t.Fatalf("victim after the flood: %d %s", a.status, a.body)
	}
	var live map[string]bool
	for i := 0; i < 1500; i++ { // closing runs in the background
		if live = goSDKSessions(srv); len(live) <= 7 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(live) > 7 || !live[sid] {
		t.Fatalf("%d go-sdk sessions live after the flood (victim's: %v), want the victim's and 3 + 3", len(live), live[sid])
	}

	// Expiry: an hour idle ends the session, in the middleware and in the
	// go-sdk.
	s.iss.Advance(time.Hour + time.Minute)
	victim = s.token(t, "victim", "tenant-v")
	if a := s.send(t, http.MethodPost, victim, sid, rpcCall(3, "recall", `{}`)); a.status != http.StatusNotFound {
		t.Fatalf("victim's idle session: %d %s, want 404", a.status, a.body)
	}
	for i := 0; i < 1500 && goSDKSessions(srv)[sid]; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if goSDKSessions(srv)[sid] {
		t.Fatal("the expired session is still open in the go-sdk")
	}
}
