package client_test

import (
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/client"
)

// ExampleNewDPoPKey sets up a transport that sends DPoP-bound tokens
// (token_type DPoP) with a fresh proof per request. An Authorizer would
// send its token request through key.TokenTransport so that the
// authorization server binds the new token to the same key.
func ExampleNewDPoPKey() {
	key, err := client.NewDPoPKey(nil, nil) // a fresh P-256 key; pass your own to keep one
	if err != nil {
		panic(err)
	}
	tr, err := client.New(client.Config{
		Resource:    "https://mcp.example.com/mcp",
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "bound-token", TokenType: "DPoP"}),
		DPoP:        key,
	})
	if err != nil {
		panic(err)
	}
	_ = &http.Client{Transport: tr}
	tokenClient := &http.Client{Transport: key.TokenTransport(nil)} // for oauth2.HTTPClient
	_ = tokenClient

	proof, _ := key.Proof(http.MethodPost, "https://mcp.example.com/mcp?ignored=1", "bound-token")
	fmt.Println(len(key.Thumbprint()), strings.Count(proof, "."))
	// Output: 43 2
}
