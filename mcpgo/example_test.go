package mcpgo_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

type tokens map[string]*validate.Claims

func (t tokens) Validate(_ context.Context, raw string) (*validate.Claims, error) {
	c, ok := t[raw]
	if !ok {
		return nil, validate.Error{Reason: "signature"}
	}
	cp := *c
	return &cp, nil
}

// An mcp-go stateful server behind the adapter: a tool reads the
// principal of its request from its context, and a session belongs to the
// principal that created it.
func ExampleAdapter() {
	m, err := middleware.New(middleware.Config{
		Validator: tokens{
			"alice": {Issuer: "https://auth.example.com", Subject: "alice", ClientID: "app", Tenant: "acme", Scopes: []string{"mcp:tools"}},
			"bob":   {Issuer: "https://auth.example.com", Subject: "bob", ClientID: "app", Tenant: "globex", Scopes: []string{"mcp:tools"}},
		},
		Metadata: prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}},
		Scopes:   []string{"mcp:tools"},
	})
	if err != nil {
		panic(err)
	}
	a, err := mcpgo.New(mcpgo.Config{Middleware: m})
	if err != nil {
		panic(err)
	}
	ms := server.NewMCPServer("example", "1")
	ms.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, _ := middleware.PrincipalFromContext(ctx)
		return mcp.NewToolResultText(p.Subject + "@" + p.Tenant), nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", m.Handler(a.Bind(server.NewStreamableHTTPServer(ms, a.Options()...))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	send := func(token, sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := send("alice", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	_, body := send("alice", sid, call)
	fmt.Println("alice:", strings.Contains(body, `alice@acme`))
	resp, _ = send("bob", sid, call)
	fmt.Println("bob on alice's session:", resp.StatusCode)
	// Output:
	// alice: true
	// bob on alice's session: 404
}
