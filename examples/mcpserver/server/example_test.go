package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
)

// The server answers a request without a token with a 401 that tells the
// client where the protected-resource metadata is.
func ExampleNew() {
	ts := httptest.NewUnstartedServer(nil)
	defer ts.Close()
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: "https://auth.example.com", Keys: &validate.StaticKeys{}}},
		Audiences: []string{resource},
	})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Config{
		Resource:             resource,
		AuthorizationServers: []string{"https://auth.example.com"},
		Validator:            v,
		Scopes:               []string{"mcp:tools"},
	})
	if err != nil {
		panic(err)
	}
	ts.Config.Handler = srv
	ts.Start()

	resp, err := http.Post(resource, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Println(strings.ReplaceAll(resp.Header.Get("WWW-Authenticate"), ts.Listener.Addr().String(), "127.0.0.1:PORT"))
	// Output:
	// 401
	// Bearer scope="mcp:tools", resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp"
}
