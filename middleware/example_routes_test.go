package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
)

// plain sends an ordinary HTTP request and prints the answer.
func plain(method, url, token, contentType, body string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	show(req)
}

// echo answers with the caller's subject and the body it received.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, _ := middleware.PrincipalFromContext(r.Context())
	b, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s: %s", p.Subject, b)
})

// Plain routes beside MCP with gorilla/mux: a REST subrouter behind
// Protect (the base scopes), an admin subrouter needing one more scope,
// and a health check without a token. Bodies are never read as JSON-RPC:
// a form goes through untouched.
func ExampleMiddleware_Protect() {
	m := newExampleMiddleware()
	r := mux.NewRouter()
	r.Handle("/mcp", m.Handler(echo))
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	api := r.PathPrefix("/api").Subrouter()
	api.Use(m.Protect())
	api.Handle("/notes", echo).Methods(http.MethodPost)
	admin := r.PathPrefix("/admin").Subrouter()
	admin.Use(m.Protect("mcp:admin"))
	admin.Handle("/users", echo)
	srv := httptest.NewServer(r)
	defer srv.Close()

	plain(http.MethodPost, srv.URL+"/api/notes", "reader", "application/x-www-form-urlencoded", "text=hello")
	plain(http.MethodPost, srv.URL+"/api/notes", "", "application/x-www-form-urlencoded", "text=hello")
	plain(http.MethodGet, srv.URL+"/admin/users", "reader", "", "")
	plain(http.MethodGet, srv.URL+"/admin/users", "admin", "", "")
	plain(http.MethodGet, srv.URL+"/healthz", "", "", "")
	// Output:
	// 200 alice: text=hello
	// 401 {"error":"unauthorized"}
	//   WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
	// 200 bob:
	// 200 ok
}

// Plain routes with http.ServeMux patterns: a webhook that needs its own
// scope on POST only, beside the MCP endpoint.
func ExampleMiddleware_Protect_serveMux() {
	m := newExampleMiddleware()
	mx := http.NewServeMux()
	mx.Handle("/mcp", m.Handler(echo))
	mx.Handle("POST /hooks/{id}", m.Protect("mcp:admin")(echo))
	mx.Handle("GET /api/notes/{id}", m.Protect()(echo))
	srv := httptest.NewServer(mx)
	defer srv.Close()

	plain(http.MethodPost, srv.URL+"/hooks/7", "admin", "text/plain", "event")
	plain(http.MethodPost, srv.URL+"/hooks/7", "reader", "text/plain", "event")
	plain(http.MethodGet, srv.URL+"/api/notes/1", "reader", "", "")
	plain(http.MethodPost, srv.URL+"/mcp", "reader", "application/x-www-form-urlencoded", "a=b") // MCP still parses JSON-RPC
	// Output:
	// 200 bob: event
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
	// 200 alice:
	// 400 {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
}

// Public operations: discovery and one harmless tool are served without a
// token, to the anonymous principal; everything else still needs one.
func ExamplePublicOperations() {
	m, err := middleware.New(middleware.Config{
		Validator: exampleTokens,
		Metadata:  prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}},
		Scopes:    []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{
			Public: middleware.PublicOperations{
				Methods: []string{"server/discover", "initialize", "notifications/initialized", "ping", "tools/list"},
				Tools:   []string{"server_time"},
			},
		},
	})
	if err != nil {
		panic(err)
	}
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := middleware.PrincipalFromContext(r.Context())
		fmt.Fprintf(w, "anonymous=%v subject=%q", p.Anonymous, p.Subject)
	})
	srv := httptest.NewServer(m.Handler(who))
	defer srv.Close()

	post(srv.URL, "", "tools/call", "server_time")
	post(srv.URL, "", "tools/call", "delete_repo")
	post(srv.URL, "bad-token", "tools/call", "server_time")
	post(srv.URL, "reader", "tools/call", "server_time")
	// Output:
	// 200 anonymous=true subject=""
	// 401 {"error":"unauthorized"}
	//   WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 401 {"error":"invalid_token"}
	//   WWW-Authenticate: Bearer error="invalid_token", scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The access token is invalid"
	// 200 anonymous=false subject="alice"
}
