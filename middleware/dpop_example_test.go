package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// Example_dPoP requires DPoP-bound tokens: a request with the bound token
// and a proof of its key passes, the same token sent as Bearer does not,
// and the 401 offers only the DPoP scheme.
func Example_dPoP() {
	key, _ := client.NewDPoPKey(nil, nil) // the client's key
	bound := tokens{"bound": {Issuer: "https://auth.example.com", Subject: "alice", ClientID: "app",
		Scopes: []string{"mcp:tools"}, Confirmation: &validate.Confirmation{JKT: key.Thumbprint()}}}
	m, err := middleware.New(middleware.Config{
		Validator: bound, // a *validate.Validator needs AllowConfirmation: true
		Metadata:  prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://auth.example.com"}},
		Scopes:    []string{"mcp:tools"},
		DPoP:      middleware.DPoPConfig{Policy: middleware.DPoPRequired},
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := middleware.PrincipalFromContext(r.Context())
		fmt.Println("sender-constrained:", p.SenderConstrained, p.KeyThumbprint == key.Thumbprint())
	})))
	defer srv.Close()

	// The proof's htu is the canonical resource URI, not the server's host.
	proof, _ := key.Proof(http.MethodGet, "https://mcp.example.com/mcp", "bound")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "DPoP bound")
	req.Header.Set("DPoP", proof)
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)

	req.Header.Set("Authorization", "Bearer bound")
	req.Header.Del("DPoP")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	// Output:
	// sender-constrained: true true
	// 200
	// 401 DPoP scope="mcp:tools", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"
}
