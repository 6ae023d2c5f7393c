package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpguard "github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// The snippets of docs/sdks.md, line for line between the markers, with
// the middleware m, the servers and the handlers as parameters. Keep them
// in sync: these tests keep the documented code compiling and working.

func snippetGoSDKStateful(m *middleware.Middleware, srv *mcp.Server, mux *http.ServeMux) error {
	// --- docs/sdks.md: go-sdk, stateful (default options)
	a, err := gosdk.New(gosdk.Config{Middleware: m})
	if err != nil {
		return err
	}
	a.Install(srv) // every handler's ctx carries the principal of its own request
	mux.Handle("/mcp", a.Handler(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv }, nil))) // sessions bound to their creator
	// ---
	return nil
}

func snippetGoSDKStateless(m *middleware.Middleware, srv *mcp.Server, mux *http.ServeMux) error {
	// --- docs/sdks.md: go-sdk, stateless
	a, err := gosdk.New(gosdk.Config{Middleware: m})
	if err != nil {
		return err
	}
	a.Install(srv)
	mux.Handle("/mcp", a.Handler(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})))
	// ---
	return nil
}

func snippetGuard(g *mcpguard.Guard, srv *mcp.Server, mux *http.ServeMux) error {
	// --- docs/sdks.md: go-sdk with mcpguard.Guard
	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
	if err != nil {
		return err
	}
	a.Install(srv)
	g.Mount(mux, a.TokenInfo(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	// ---
	return nil
}

func snippetMCPGo(g *mcpguard.Guard, mcpServer *mcpgoserver.MCPServer, mux *http.ServeMux) error {
	// --- docs/sdks.md: mark3labs/mcp-go
	a, err := mcpgo.New(mcpgo.Config{Middleware: g.Middleware()}) // Stateless: true for WithStateLess
	if err != nil {
		return err
	}

	s := mcpgoserver.NewStreamableHTTPServer(mcpServer, a.Options()...) // a's options last
	g.Mount(mux, a.Bind(s))                                             // the metadata too; handlers: middleware.PrincipalFromContext(ctx)
	// ---
	return nil
}

func snippetPlainRoutes(m *middleware.Middleware, mcpHandler, notes, admin, hook http.Handler) (*mux.Router, *http.ServeMux) {
	// --- docs/sdks.md: plain routes
	r := mux.NewRouter()
	r.Handle("/mcp", mcpHandler) // e.g. a.Handler(…) above
	api := r.PathPrefix("/api").Subrouter()
	api.Use(m.Protect()) // same tokens, challenges and OnDecision; the body is never parsed
	api.Handle("/notes", notes)
	api.Handle("/admin", m.RequireScopes("admin")(admin)) // per-route step-up
	sm := http.NewServeMux()
	sm.Handle("POST /hooks/{id}", m.Protect("hooks:write")(hook))
	// ---
	return r, sm
}

// snippetEnv is a development authorization server and a middleware
// trusting it, for a resource on mcpTS.
type snippetEnv struct {
	as       *devmint.Server
	resource string
	issuer   string
	m        *middleware.Middleware
	v        *validate.Validator
}

func newSnippetEnv(t *testing.T, mcpTS *httptest.Server) *snippetEnv {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	e := &snippetEnv{issuer: "http://" + asTS.Listener.Addr().String(), resource: "http://" + mcpTS.Listener.Addr().String() + "/mcp"}
	as, err := devmint.New(devas.Config{Issuer: e.issuer, Resources: []string{e.resource},
		Scopes: []string{baseScope, "admin", "hooks:write"}})
	if err != nil {
		t.Fatal(err)
	}
	e.as = as
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	e.v, err = validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: e.issuer, Keys: &validate.StaticKeys{Set: as.PublicKeys()}}},
		Audiences:   []string{e.resource},
		TenantClaim: "tenant",
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m, err = middleware.New(middleware.Config{Validator: e.v, Scopes: []string{baseScope},
		Metadata: prm.Metadata{Resource: e.resource, AuthorizationServers: []string{e.issuer}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *snippetEnv) token(t *testing.T, subject, tenant string, scopes ...string) string {
	t.Helper()
	tok, err := e.as.IssueToken(subject, tenant, "snippet-client", e.resource, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// helloServer is a go-sdk server whose hello tool answers the subject and
// tenant of its context's principal.
func helloServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mine", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		p, ok := middleware.PrincipalFromContext(ctx)
		if !ok {
			return nil, map[string]string{"hello": "nobody"}, nil
		}
		return nil, map[string]string{"hello": p.Subject + "@" + p.Tenant}, nil
	})
	return srv
}

// checkSessions checks, on a stateful endpoint, that alice's session
// serves alice and refuses bob with status refused.
func checkSessions(ctx context.Context, t *testing.T, url, alice, bob string, refused int) {
	t.Helper()
	sid := initSession(ctx, t, url, alice)
	hdr := map[string]string{"Mcp-Session-Id": sid}
	r := rawPost(ctx, t, url, rawRequest{token: alice, revision: rev20251125, method: "tools/call", params: toolCall("hello", nil), header: hdr})
	if res := r.tool(t); !strings.Contains(string(res.StructuredContent), "alice@tenant-a") {
		t.Errorf("alice in her session: %s", r.body)
	}
	r = rawPost(ctx, t, url, rawRequest{token: bob, revision: rev20251125, method: "tools/call", params: toolCall("hello", nil), header: hdr})
	if r.status != refused || strings.Contains(string(r.body), "alice") {
		t.Errorf("bob in alice's session: %d %s, want %d", r.status, r.body, refused)
	}
}

func TestSDKSnippets(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T) (*httptest.Server, *snippetEnv) {
		ts := httptest.NewUnstartedServer(nil)
		t.Cleanup(ts.Close)
		return ts, newSnippetEnv(t, ts)
	}
	t.Run("go-sdk stateful", func(t *testing.T) {
		t.Parallel()
		ts, e := start(t)
		mux := http.NewServeMux()
		if err := snippetGoSDKStateful(e.m, helloServer(), mux); err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = mux
		ts.Start()
		checkSessions(testContext(t), t, e.resource, e.token(t, "alice", "tenant-a", baseScope), e.token(t, "bob", "tenant-b", baseScope), http.StatusNotFound)
	})
	t.Run("go-sdk stateless", func(t *testing.T) {
		t.Parallel()
		ts, e := start(t)
		mux := http.NewServeMux()
		if err := snippetGoSDKStateless(e.m, helloServer(), mux); err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = mux
		ts.Start()
		ctx := testContext(t)
		for _, who := range []string{"alice", "bob"} {
			r := rawPost(ctx, t, e.resource, rawRequest{token: e.token(t, who, "tenant-"+who, baseScope), revision: rev20260728, method: "tools/call", params: toolCall("hello", nil)})
			if res := r.tool(t); !strings.Contains(string(res.StructuredContent), who+"@tenant-"+who) {
				t.Errorf("%s: %s", who, r.body)
			}
		}
	})
	t.Run("guard", func(t *testing.T) {
		t.Parallel()
		ts, e := start(t)
		g, err := mcpguard.New(mcpguard.Config{Resource: e.resource, Issuers: []string{e.issuer}, Scopes: []string{baseScope},
			Keys:     map[string]validate.KeySource{e.issuer: &validate.StaticKeys{Set: e.as.PublicKeys()}},
			Validate: validate.Config{TenantClaim: "tenant"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		mux := http.NewServeMux()
		if err := snippetGuard(g, helloServer(), mux); err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = mux
		ts.Start()
		checkSessions(testContext(t), t, e.resource, e.token(t, "alice", "tenant-a", baseScope), e.token(t, "bob", "tenant-b", baseScope), http.StatusNotFound)
	})
	t.Run("mcp-go", func(t *testing.T) {
		t.Parallel()
		ts, e := start(t)
		ms := mcpgoserver.NewMCPServer("mine", "1")
		ms.AddTool(mcpgomcp.NewTool("hello"), func(ctx context.Context, _ mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			p, _ := middleware.PrincipalFromContext(ctx)
			return &mcpgomcp.CallToolResult{StructuredContent: map[string]string{"hello": p.Subject + "@" + p.Tenant},
				Content: []mcpgomcp.Content{mcpgomcp.NewTextContent("hi")}}, nil
		})
		g, err := mcpguard.New(mcpguard.Config{Resource: e.resource, Issuers: []string{e.issuer}, Scopes: []string{baseScope},
			Keys:     map[string]validate.KeySource{e.issuer: &validate.StaticKeys{Set: e.as.PublicKeys()}},
			Validate: validate.Config{TenantClaim: "tenant"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		mux := http.NewServeMux()
		if err := snippetMCPGo(g, ms, mux); err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = mux
		ts.Start()
		// The metadata its own 401 points to is served.
		resp, err := http.Get(g.Middleware().ResourceMetadataURL())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("protected-resource metadata: %d", resp.StatusCode)
		}
		checkSessions(testContext(t), t, e.resource, e.token(t, "alice", "tenant-a", baseScope), e.token(t, "bob", "tenant-b", baseScope), http.StatusNotFound)
	})
	t.Run("plain routes", func(t *testing.T) {
		t.Parallel()
		ts, e := start(t)
		echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := middleware.PrincipalFromContext(r.Context())
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, p.Subject+":"+string(b))
		})
		r, sm := snippetPlainRoutes(e.m, e.m.Handler(echo), echo, echo, echo)
		r.PathPrefix("/hooks/").Handler(sm)
		ts.Config.Handler = r
		ts.Start()
		base := "http://" + ts.Listener.Addr().String()
		user := e.token(t, "ann", "t", baseScope)
		for _, c := range []struct {
			method, path, token, body string
			status                    int
			want                      string
		}{
			{http.MethodPost, "/api/notes", user, "a=1", 200, "ann:a=1"},
			{http.MethodPost, "/api/notes", "", "a=1", 401, ""},
			{http.MethodGet, "/api/admin", user, "", 403, ""},
			{http.MethodGet, "/api/admin", e.token(t, "ann", "t", baseScope, "admin"), "", 200, "ann:"},
			{http.MethodPost, "/hooks/1", e.token(t, "ann", "t", baseScope, "hooks:write"), "", 200, "ann:"},
			{http.MethodPost, "/hooks/1", user, "x", 403, ""},
		} {
			req, _ := http.NewRequestWithContext(testContext(t), c.method, base+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != c.status || (c.want != "" && string(b) != c.want) {
				t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, resp.StatusCode, b, c.status, c.want)
			}
		}
	})
}
