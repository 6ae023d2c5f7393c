package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/client"
)

// A machine client authorizes with its own client credentials (the MCP
// OAuth client credentials extension) when the MCP server challenges it.
func ExampleClientCredentials() {
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
				"response_types_supported": []string{"token"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
			return
		}
		_ = r.ParseForm()
		id, _, _ := r.BasicAuth()
		fmt.Println(r.PostForm.Get("grant_type"), id, r.PostForm.Get("scope"))
		_, _ = io.WriteString(w, `{"access_token":"machine-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer as.Close()
	var mcp *httptest.Server
	mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": mcp.URL + "/mcp", "authorization_servers": []string{as.URL}})
		case r.Header.Get("Authorization") != "Bearer machine-token":
			challenge.Write(w, challenge.Challenge{Scope: []string{"mcp:tools"}})
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer mcp.Close()

	cc, err := client.NewClientCredentials(client.ClientCredentialsConfig{
		ClientID:     "reporting-bot",
		ClientSecret: "secret",
		Issuer:       as.URL, // the credentials go to this server only
		// loopback for the example; the zero value refuses it
		DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true}),
	})
	if err != nil {
		panic(err)
	}
	tr, err := client.New(client.Config{Resource: mcp.URL + "/mcp", Authorizer: cc})
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(mcp.URL + "/mcp")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// client_credentials reporting-bot mcp:tools
	// 200 ok
}
