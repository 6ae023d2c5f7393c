package gosdk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// tokens stands in for a *validate.Validator: it accepts the tokens it
// lists.
type tokens map[string]*validate.Claims

func (t tokens) Validate(_ context.Context, raw string) (*validate.Claims, error) {
	c, ok := t[raw]
	if !ok {
		return nil, validate.Error{Reason: "signature"}
	}
	cp := *c
	return &cp, nil
}

var exampleTokens = tokens{
	"alice": {Issuer: "https://auth.example.com", Subject: "alice", ClientID: "app", Tenant: "acme", Scopes: []string{"mcp:tools"}},
	"bob":   {Issuer: "https://auth.example.com", Subject: "bob", ClientID: "app", Tenant: "globex", Scopes: []string{"mcp:tools"}},
}

// bearer adds a fixed access token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// The go-sdk's default, stateful handler behind the adapter: the real
// go-sdk client connects as alice and calls whoami, which reads the
// principal from its context; bob, with his own valid token, cannot use
// alice's session.
func ExampleAdapter() {
	m, err := middleware.New(middleware.Config{
		Validator: exampleTokens,
		Metadata:  prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}},
		Scopes:    []string{"mcp:tools"},
	})
	if err != nil {
		panic(err)
	}
	a, err := gosdk.New(gosdk.Config{Middleware: m})
	if err != nil {
		panic(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, _ := middleware.PrincipalFromContext(ctx) // the principal of this request
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.Subject + "@" + p.Tenant}}}, nil, nil
	})
	a.Install(server)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.Handler(h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer("alice")}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		panic(err)
	}
	fmt.Println("alice's session:", res.Content[0].(*mcp.TextContent).Text)

	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := bearer("bob").RoundTrip(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("bob on alice's session:", resp.StatusCode)
	// Output:
	// alice's session: alice@acme
	// bob on alice's session: 404
}

// Without Install, read the principal from the request: req.Extra carries
// the TokenInfo of the HTTP request that carried this call, in both modes.
func ExamplePrincipal() {
	handler := func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, ok := gosdk.Principal(req)
		if !ok || p.Anonymous {
			return nil, nil, fmt.Errorf("sign in first")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + p.Subject}}}, nil, nil
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello"}, handler)
	fmt.Println("registered")
	// Output: registered
}
