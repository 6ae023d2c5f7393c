package mcpgo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

const legacyRev = "2025-11-25"

// who is what the whoami tool reports from its context.
type who struct {
	Subject   string   `json:"subject"`
	Tenant    string   `json:"tenant"`
	Scopes    []string `json:"scopes"`
	Anonymous bool     `json:"anonymous"`
	None      bool     `json:"none"`
}

type fixture struct {
	iss *authtest.Issuer
	url string
}

type fixtureConfig struct {
	stateless bool
	bare      bool // the middleware alone, without the adapter (mcp-go stateful)
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
			Tools:   map[string][]string{"secret": {"secret:read"}},
			Prompts: map[string][]string{"admin_prompt": {"admin"}},
			Public:  middleware.PublicOperations{Methods: []string{"initialize", "notifications/initialized"}, Tools: []string{"hello"}},
		},
		Now: iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := server.NewMCPServer("mcpgo-test", "0", server.WithCompletions(), server.WithPromptCompletionProvider(echoCompletions{}))
	whoami := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var w who
		if p, ok := middleware.PrincipalFromContext(ctx); ok {
			w.Subject, w.Tenant, w.Scopes, w.Anonymous = p.Subject, p.Tenant, p.Scopes, p.Anonymous
		} else {
			w.None = true
		}
		b, _ := json.Marshal(w)
		return mcp.NewToolResultText(string(b)), nil
	}
	for _, name := range []string{"whoami", "secret", "hello"} {
		ms.AddTool(mcp.NewTool(name), whoami)
	}
	a, err := mcpgo.New(mcpgo.Config{Middleware: m, Stateless: fc.stateless})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler
	if fc.bare {
		h = m.Handler(server.NewStreamableHTTPServer(ms, server.WithStateful(true)))
	} else {
		h = m.Handler(a.Bind(server.NewStreamableHTTPServer(ms, a.Options()...)))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &fixture{iss: iss, url: resource}
}

func (f *fixture) token(t *testing.T, subject, tenant string, scopes ...string) string {
	t.Helper()
	return f.iss.Token(t, authtest.Token{Subject: subject, Tenant: tenant, Scopes: append([]string{}, scopes...)})
}

type response struct {
	status int
	header http.Header
	body   string
	stream bool
}

func (f *fixture) do(t *testing.T, method, body, token, sid string) *response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", legacyRev)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &response{status: resp.StatusCode, header: resp.Header}
	if method == http.MethodGet && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.stream = true
		return r
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	r.body = string(b)
	return r
}

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

func (f *fixture) call(t *testing.T, tool, token, sid string) *response {
	t.Helper()
	return f.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`, token, sid)
}

// whoami calls tool and decodes the text result.
func (f *fixture) whoami(t *testing.T, tool, token, sid string) who {
	t.Helper()
	r := f.call(t, tool, token, sid)
	body := r.body
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				body = d
			}
		}
	}
	var res struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if r.status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || res.Result.IsError || len(res.Result.Content) != 1 {
		t.Fatalf("%s: %d %s", tool, r.status, r.body)
	}
	var w who
	if err := json.Unmarshal([]byte(res.Result.Content[0].Text), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// echoCompletions completes any prompt argument with the prompt's name, so
// a test sees which prompt mcp-go resolved.
type echoCompletions struct{}

func (echoCompletions) CompletePromptArgument(_ context.Context, prompt string, _ mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{"prompt:" + prompt}}, nil
}
