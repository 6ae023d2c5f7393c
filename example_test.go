package mcpguard_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gorilla/mux"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// now is the pinned clock of the runnable examples.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// issuer stands in for the authorization server https://auth.example.com:
// it signs RFC 9068 access tokens, and its public key is given to the
// Guard as static keys (Config.Keys), so the examples need no network.
type issuer struct {
	key  *ecdsa.PrivateKey
	keys *validate.StaticKeys
}

func newIssuer() *issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "key-1", Algorithm: string(jose.ES256), Use: "sig"}
	return &issuer{key: key, keys: &validate.StaticKeys{Set: []jose.JSONWebKey{pub}}}
}

func (is *issuer) token(scope string) string {
	opts := (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "key-1")
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, opts)
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(signer).Claims(map[string]any{
		"iss": "https://auth.example.com", "sub": "alice", "aud": "https://mcp.example.com/mcp",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "jti": "4f1c",
		"client_id": "https://client.example/meta.json", "scope": scope,
	}).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

// newGuard builds the Guard of the examples.
func newGuard(is *issuer) *mcpguard.Guard {
	g, err := mcpguard.New(mcpguard.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []string{"https://auth.example.com"},
		Keys:     map[string]validate.KeySource{"https://auth.example.com": is.keys},
		Scopes:   []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{
			Tools: map[string][]string{"delete_repo": {"repo:admin"}},
		},
		Validate: validate.Config{Now: func() time.Time { return now }},
	})
	if err != nil {
		panic(err)
	}
	return g
}

// callTool POSTs a tools/call to url and prints the answer.
func callTool(url, token, tool string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
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

// whoami stands in for the MCP server: it answers with the principal the
// Guard authenticated.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, _ := middleware.PrincipalFromContext(r.Context())
	fmt.Fprintf(w, "served %s", p.Subject)
})

// A Guard mounted on an http.ServeMux: the metadata is served without a
// token, the MCP endpoint (at the path of Resource) needs one, and a tool
// that needs more scope gets a step-up challenge.
func Example() {
	is := newIssuer()
	g := newGuard(is)
	defer g.Close()
	mx := http.NewServeMux()
	g.Mount(mx, whoami)
	srv := httptest.NewServer(mx)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/.well-known/oauth-protected-resource/mcp", nil)
	show(req)
	callTool(srv.URL+"/mcp", "", "get_weather")
	callTool(srv.URL+"/mcp", is.token("mcp:tools"), "get_weather")
	callTool(srv.URL+"/mcp", is.token("mcp:tools"), "delete_repo")
	// Output:
	// 200 {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp:tools","repo:admin"]}
	// 401 {"error":"unauthorized"}
	//   WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 200 served alice
	// 403 {"error":"insufficient_scope"}
	//   WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:tools repo:admin", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The operation requires additional scope"
}

// With gorilla/mux, whose Handle method returns a *Route, register the
// routes yourself.
func ExampleGuard_Routes() {
	is := newIssuer()
	g := newGuard(is)
	defer g.Close()
	r := mux.NewRouter()
	for _, rt := range g.Routes(whoami) {
		fmt.Println("route", rt.Pattern)
		r.Handle(rt.Pattern, rt.Handler)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()

	callTool(srv.URL+"/mcp", is.token("mcp:tools repo:admin"), "delete_repo")
	// Output:
	// route /.well-known/oauth-protected-resource/mcp
	// route /.well-known/oauth-protected-resource
	// route /mcp
	// 200 served alice
}

// Protecting an MCP go-sdk server. Keys are discovered from the issuer's
// metadata and refreshed in the background; Close stops that. Tool
// handlers read the caller from their context.
func Example_goSDK() {
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Who is calling"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{ Subject string }, error) {
			p, _ := middleware.PrincipalFromContext(ctx)
			return nil, struct{ Subject string }{p.Subject}, nil
		})

	g, err := mcpguard.New(mcpguard.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []string{"https://auth.example.com"},
		Scopes:   []string{"mcp:tools"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	mx := http.NewServeMux()
	g.Mount(mx, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mx)) // TLS terminates in front; Resource is the public URL
}
