package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/gorilla/mux"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// tokens stands in for a *validate.Validator in these examples, so that
// they need no authorization server: it accepts the tokens it lists. In
// production, pass the *validate.Validator built with validate.New, with
// Metadata.Resource among its audiences.
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
	"reader": {Issuer: "https://auth.example.com", Subject: "alice", ClientID: "app", Tenant: "acme",
		Scopes: []string{"mcp:tools"}},
	"admin": {Issuer: "https://auth.example.com", Subject: "bob", ClientID: "app", Tenant: "acme",
		Scopes: []string{"mcp:tools", "mcp:admin"}},
}

func newExampleMiddleware() *middleware.Middleware {
	m, err := middleware.New(middleware.Config{
		Validator: exampleTokens,
		Metadata: prm.Metadata{
			Resource:             "https://mcp.example.com/mcp",
			AuthorizationServers: []string{"https://auth.example.com"},
			ScopesSupported:      []string{"mcp:tools"},
		},
		Scopes: []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{
			Tools: map[string][]string{"delete_repo": {"repo:admin"}},
		},
		ScopeImplies: map[string][]string{"mcp:admin": {"repo:admin"}},
	})
	if err != nil {
		panic(err)
	}
	return m
}

// post sends a JSON-RPC request of MCP revision 2026-07-28 and prints the
// status and the challenge, if any.
func post(url, token, method, name string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"name":%q,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, method, name)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	show(req)
}

func show(req *http.Request) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(b)))
	if c := resp.Header.Get("WWW-Authenticate"); c != "" {
		fmt.Println("  WWW-Authenticate:", c)
	}
}

// The middleware with plain net/http: the metadata document is served
// without a token, the MCP endpoint requires one, and a tool needing more
// scope gets a step-up challenge listing every scope it needs.
func ExampleMiddleware_Handler() {
	m := newExampleMiddleware()
	mcpServer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := middleware.PrincipalFromContext(r.Context())
		fmt.Fprintf(w, `{"served":%q}`, p.Subject)
	})
	mx := http.NewServeMux()
	inserted, root := m.MetadataPaths()
	mx.Handle(inserted, m.MetadataHandler())
	mx.Handle(root, m.MetadataHandler())
	mx.Handle("/mcp", m.Handler(mcpServer))
	srv := httptest.NewServer(mx)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+inserted, nil)
	show(req)
	post(srv.URL+"/mcp", "", "tools/call", "get_weather")
	post(srv.URL+"/mcp", "reader", "tools/call", "get_weather")
	post(srv.URL+"/mcp", "reader", "tools/call", "delete_repo")
	post(srv.URL+"/mcp", "admin", "tools/call", "delete_repo") // mcp:admin implies repo:admin
	// Output:
	// 200 {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp:tools"]}
	// 401 {"error":"unauthorized"}
	//   WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 200 {"served":"alice"}
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools repo:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
	// 200 {"served":"bob"}
}

// The middleware with gorilla/mux: router.Use on the MCP subtree, and a
// subrouter that requires an extra scope (per-route step-up).
func ExampleMiddleware_RequireScopes() {
	m := newExampleMiddleware()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

	r := mux.NewRouter()
	inserted, root := m.MetadataPaths()
	r.Handle(inserted, m.MetadataHandler())
	r.Handle(root, m.MetadataHandler())
	api := r.PathPrefix("/mcp").Subrouter()
	api.Use(m.Handler)
	api.Handle("", ok)
	admin := api.PathPrefix("/admin").Subrouter()
	admin.Use(m.RequireScopes("mcp:admin"))
	admin.Handle("/stats", ok)
	srv := httptest.NewServer(r)
	defer srv.Close()

	for _, c := range []struct{ path, token string }{
		{"/mcp", "reader"},
		{"/mcp/admin/stats", "reader"},
		{"/mcp/admin/stats", "admin"},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		show(req)
	}
	// Output:
	// 200 ok
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
	// 200 ok
}

// A tool handler reads the principal from its context and checks a tenant
// named in the tool arguments against the token's tenant. Here the "MCP
// server" is a plain handler that decodes the tools/call arguments; with
// the MCP go-sdk, the tool handler's ctx carries the principal the same
// way.
func ExampleCheckTenant() {
	m := newExampleMiddleware()
	listInvoices := func(ctx context.Context, argTenant string) (string, error) {
		if err := middleware.CheckTenant(ctx, argTenant); err != nil {
			return "", err
		}
		p, _ := middleware.PrincipalFromContext(ctx)
		tenant, err := middleware.TenantFromContext(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("invoices of %s for %s", tenant, p.Subject), nil
	}
	mcpServer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Params struct {
				Arguments struct {
					Tenant string `json:"tenant"`
				} `json:"arguments"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		out, err := listInvoices(r.Context(), msg.Params.Arguments.Tenant)
		if errors.Is(err, middleware.Error{Reason: "tenant_mismatch"}) {
			fmt.Fprintln(w, "tool error: tenant not allowed")
			return
		}
		fmt.Fprintln(w, out)
	})
	srv := httptest.NewServer(m.Handler(mcpServer))
	defer srv.Close()

	for _, tenant := range []string{"acme", "", "globex"} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_invoices","arguments":{"tenant":%q}}}`, tenant)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer reader")
		show(req)
	}
	// Output:
	// 200 invoices of acme for alice
	// 200 invoices of acme for alice
	// 200 tool error: tenant not allowed
}

// Config.OnDecision feeds metrics and logs: here a counter per reason,
// method and tool, as a Prometheus CounterVec would be labelled. Tool names
// the policy does not list are counted as "(unlisted)", so a client cannot
// grow the label set.
func ExampleConfig_onDecision() {
	var mu sync.Mutex
	counts := map[string]int{}
	cfg := middleware.Config{
		Validator: exampleTokens,
		Metadata: prm.Metadata{
			Resource:             "https://mcp.example.com/mcp",
			AuthorizationServers: []string{"https://auth.example.com"},
		},
		Scopes:     []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{Tools: map[string][]string{"delete_repo": {"repo:admin"}}},
		OnDecision: func(_ context.Context, d middleware.Decision) {
			mu.Lock()
			defer mu.Unlock()
			counts[fmt.Sprintf("reason=%s method=%s tool=%s", d.Reason, d.Method, d.Name)]++
		},
	}
	m, err := middleware.New(cfg)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })))
	defer srv.Close()

	post(srv.URL, "", "tools/call", "delete_repo")
	post(srv.URL, "reader", "tools/call", "delete_repo")
	post(srv.URL, "reader", "tools/call", "get_weather")
	post(srv.URL, "reader", "tools/call", "made_up_tool_9f2c")
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Println(counts[k], k)
	}
	// Output:
	// 401 {"error":"unauthorized"}
	//   WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools repo:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
	// 200 ok
	// 200 ok
	// 2 reason=authorized method=tools/call tool=(unlisted)
	// 1 reason=insufficient_scope method=tools/call tool=delete_repo
	// 1 reason=no_token method= tool=
}
