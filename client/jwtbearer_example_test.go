package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/client"
)

// An MCP client in an enterprise exchanges the user's ID token at the
// identity provider for an ID-JAG, and redeems it at the MCP server's
// authorization server (Enterprise-Managed Authorization).
func ExampleIDJAG() {
	var srv *httptest.Server // the identity provider and the MCP authorization server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = r.ParseForm()
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token",
				"response_types_supported": []string{"code"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
				"grant_types_supported": []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"}})
		case "/idp/token":
			fmt.Println("IdP:", r.PostForm.Get("requested_token_type"), r.PostForm.Get("audience") == srv.URL)
			_, _ = io.WriteString(w, `{"access_token":"an-id-jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`)
		case "/token":
			fmt.Println("AS:", r.PostForm.Get("grant_type"), r.PostForm.Get("assertion"))
			_, _ = io.WriteString(w, `{"access_token":"user-token","token_type":"Bearer","expires_in":3600}`)
		}
	}))
	defer srv.Close()
	mcp := protectedMCP(srv.URL, "user-token")
	defer mcp.Close()

	a, err := client.NewIDJAG(client.IDJAGConfig{
		Client:            client.ClientCredentialsConfig{ClientID: "chat-app", ClientSecret: "secret", Issuer: srv.URL, DiscoveryHTTPClient: loopback()},
		IdPTokenURL:       srv.URL + "/idp/token",
		IdPClientID:       "chat-app-at-idp",
		IdentityAssertion: func(context.Context) (string, error) { return "the-users-id-token", nil },
	})
	if err != nil {
		panic(err)
	}
	get(mcp.URL+"/mcp", a)
	// Output:
	// IdP: urn:ietf:params:oauth:token-type:id-jag true
	// AS: urn:ietf:params:oauth:grant-type:jwt-bearer an-id-jag
	// 200 ok
}

// A workload presents the JWT its platform issued (here a file, as a
// Kubernetes projected token) with the JWT bearer grant (Workload
// Identity Federation). The file is read again for every new token.
func ExampleWorkloadIdentity() {
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = r.ParseForm()
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
				"response_types_supported": []string{"code"}, "grant_types_supported": []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"}})
			return
		}
		fmt.Println("AS:", r.PostForm.Get("grant_type"), r.PostForm.Get("assertion") == workloadJWT)
		_, _ = io.WriteString(w, `{"access_token":"workload-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer as.Close()
	mcp := protectedMCP(as.URL, "workload-token")
	defer mcp.Close()
	dir, _ := os.MkdirTemp("", "wif")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "token")
	_ = os.WriteFile(file, []byte(workloadJWT), 0o600)

	w, err := client.NewWorkloadIdentity(client.WorkloadIdentityConfig{
		TokenFile:           file, // e.g. /var/run/secrets/tokens/mcp
		Issuer:              as.URL,
		DiscoveryHTTPClient: loopback(),
	})
	if err != nil {
		panic(err)
	}
	get(mcp.URL+"/mcp", w)
	// Output:
	// AS: urn:ietf:params:oauth:grant-type:jwt-bearer true
	// 200 ok
}

// workloadJWT is an ES256 JWT without exp (sub "spiffe://example.org/agent").
const workloadJWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzcGlmZmU6Ly9leGFtcGxlLm9yZy9hZ2VudCJ9.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2k"

// protectedMCP is an MCP server that wants the access token want, with
// authorization server as.
func protectedMCP(as, want string) *httptest.Server {
	var mcp *httptest.Server
	mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": mcp.URL + "/mcp", "authorization_servers": []string{as}})
		case r.Header.Get("Authorization") != "Bearer "+want:
			challenge.Write(w, challenge.Challenge{Scope: []string{"mcp:tools"}})
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	return mcp
}

// loopback is the guarded client with loopback allowed, for examples; the
// zero value refuses loopback.
func loopback() *http.Client {
	return asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
}

// get requests url through a transport with the Authorizer a.
func get(url string, a client.Authorizer) {
	tr, err := client.New(client.Config{Resource: url, Authorizer: a})
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
}
