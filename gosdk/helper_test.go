package gosdk_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

const (
	legacyRev = "2025-11-25"
	modernRev = "2026-07-28"
)

// who is what the whoami tool reports: the principal of the handler's
// context and the one gosdk.Principal reads from the request.
type who struct {
	CtxSubject string   `json:"ctx_subject"`
	CtxTenant  string   `json:"ctx_tenant"`
	CtxScopes  []string `json:"ctx_scopes"`
	CtxAnon    bool     `json:"ctx_anonymous"`
	CtxNone    bool     `json:"ctx_none"`
	ReqSubject string   `json:"req_subject"`
	ReqScopes  []string `json:"req_scopes"`
	ReqAnon    bool     `json:"req_anonymous"`
	UserID     string   `json:"user_id"`
}

// fixture is a go-sdk MCP server behind the adapter, on loopback.
type fixture struct {
	iss *authtest.Issuer
	url string
	m   *middleware.Middleware
}

type fixtureConfig struct {
	stateless bool
	noInstall bool
	lists     middleware.ListMode
	sessions  middleware.SessionConfig
}

func newFixture(t *testing.T, fc fixtureConfig) *fixture {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:   []string{resource},
		TenantClaim: "tenant",
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator: v,
		Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:    []string{"mcp"},
		Operations: middleware.OperationPolicy{
			Tools:   map[string][]string{"whoami": nil, "secret": {"secret:read"}},
			Prompts: map[string][]string{"admin_prompt": {"admin"}},
			Resources: []middleware.ResourceRule{
				{URI: "file:///admin", Scopes: []string{"admin"}},
				{URI: "file:///vault/", Prefix: true, Scopes: []string{"admin"}},
			},
			Public: middleware.PublicOperations{
				Methods: []string{"initialize", "notifications/initialized", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping"},
				Tools:   []string{"hello"},
			},
		},
		Sessions: fc.sessions,
		Lists:    fc.lists,
		Now:      iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := gosdk.New(gosdk.Config{Middleware: m})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-test", Version: "0"}, &mcp.ServerOptions{
		// Completions name what they complete, so a test sees which
		// reference reached the handler.
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			ref := req.Params.Ref
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{ref.Type + ":" + ref.Name + ref.URI}}}, nil
		},
	})
	whoami := func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, who, error) {
		var w who
		if p, ok := middleware.PrincipalFromContext(ctx); ok {
			w.CtxSubject, w.CtxTenant, w.CtxScopes, w.CtxAnon = p.Subject, p.Tenant, p.Scopes, p.Anonymous
		} else {
			w.CtxNone = true
		}
		if p, ok := gosdk.Principal(req); ok {
			w.ReqSubject, w.ReqScopes, w.ReqAnon = p.Subject, p.Scopes, p.Anonymous
		}
		if ti := req.Extra.TokenInfo; ti != nil {
			w.UserID = ti.UserID
		}
		return nil, w, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, whoami)
	mcp.AddTool(s, &mcp.Tool{Name: "hello"}, whoami)
	mcp.AddTool(s, &mcp.Tool{Name: "secret"}, whoami)
	s.AddPrompt(&mcp.Prompt{Name: "admin_prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greeting"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	rh := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	s.AddResource(&mcp.Resource{Name: "admin", URI: "file:///admin"}, rh)
	s.AddResource(&mcp.Resource{Name: "readme", URI: "file:///readme"}, rh)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "vault", URITemplate: "file:///vault/{name}"}, rh)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "files", URITemplate: "file:///{name}"}, rh)
	if !fc.noInstall {
		a.Install(s)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless: fc.stateless, JSONResponse: true,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.Handler(h))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &fixture{iss: iss, url: resource, m: m}
}

// token mints a token for subject of tenant with scopes.
func (f *fixture) token(t *testing.T, subject, tenant string, scopes ...string) string {
	t.Helper()
	return f.iss.Token(t, authtest.Token{Subject: subject, Tenant: tenant, Scopes: append([]string{}, scopes...)})
}

// response is an HTTP answer.
type response struct {
	status int
	header http.Header
	body   string
	rpc    struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// do sends method to the MCP endpoint with body (may be empty), token and
// session ID (each may be empty).
func (f *fixture) do(t *testing.T, method, body, token, sid string, hdr ...string) *response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", legacyRev)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &response{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return r // a stream: never read, the test only needs to know it opened
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	r.body = string(b)
	_ = json.Unmarshal(b, &r.rpc)
	return r
}

// initialize starts a 2025-11-25 session and returns its ID ("" when the
// server is stateless).
func (f *fixture) initialize(t *testing.T, token string) string {
	t.Helper()
	r := f.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, token, "")
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid != "" {
		if n := f.do(t, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, token, sid); n.status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: %d %s", n.status, n.body)
		}
	}
	return sid
}

// call calls tool in session sid (legacy) or, with sid "", statelessly
// with the 2025-11-25 headers.
func (f *fixture) call(t *testing.T, tool, token, sid string) *response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	if sid == "" {
		return f.do(t, http.MethodPost, body, token, "", "MCP-Protocol-Version", legacyRev)
	}
	return f.do(t, http.MethodPost, body, token, sid)
}

// whoami calls tool and decodes its answer, failing the test on an error.
func (f *fixture) whoami(t *testing.T, tool, token, sid string) who {
	t.Helper()
	r := f.call(t, tool, token, sid)
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if r.status != http.StatusOK || r.rpc.Error != nil || json.Unmarshal(r.rpc.Result, &res) != nil || res.IsError {
		t.Fatalf("%s: %d %s", tool, r.status, r.body)
	}
	var w who
	if err := json.Unmarshal(res.StructuredContent, &w); err != nil {
		t.Fatal(err)
	}
	return w
}
