package devidp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/devas/devidp"
)

// The IdP exchanges one of its ID tokens for an ID-JAG for the MCP
// authorization server (RFC 8693).
func Example() {
	ts := httptest.NewUnstartedServer(nil)
	idp, err := devidp.New(devidp.Config{
		Issuer:  "http://" + ts.Listener.Addr().String(),
		Clients: []devidp.Client{{ID: "chat-app"}},
	})
	if err != nil {
		panic(err)
	}
	ts.Config.Handler = idp
	ts.Start()
	defer ts.Close()

	idToken, _ := idp.IDToken("alice", "chat-app")
	tok, err := client.ExchangeToken(context.Background(), nil, client.ExchangeConfig{
		TokenURL: idp.Issuer() + "/token", ClientID: "chat-app",
		Audience: []string{"https://auth.example.com"}, Resource: []string{"https://mcp.example.com/mcp"},
		RequestedTokenType: "urn:ietf:params:oauth:token-type:id-jag",
		SubjectTokenType:   "urn:ietf:params:oauth:token-type:id_token",
	}, idToken)
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.Extra("issued_token_type"), tok.TokenType)

	// Another client's ID token is refused.
	other, _ := idp.IDToken("alice", "someone-else")
	_, err = client.ExchangeToken(context.Background(), nil, client.ExchangeConfig{
		TokenURL: idp.Issuer() + "/token", ClientID: "chat-app", Audience: []string{"https://auth.example.com"},
		RequestedTokenType: "urn:ietf:params:oauth:token-type:id-jag",
		SubjectTokenType:   "urn:ietf:params:oauth:token-type:id_token",
	}, other)
	var e *client.Error
	fmt.Println(errors.As(err, &e), e.StatusCode, e.Code)
	// Output:
	// urn:ietf:params:oauth:token-type:id-jag N_A
	// true 400 invalid_grant
}
