package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/prm"
)

// exampleAS stands in for an authorization server: it mints opaque tokens
// and remembers their scopes.
type exampleAS struct {
	mu     sync.Mutex
	tokens map[string][]string
}

func (as *exampleAS) mint(scopes []string) string {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.tokens == nil {
		as.tokens = map[string][]string{}
	}
	tok := fmt.Sprintf("at-%d", len(as.tokens)+1)
	as.tokens[tok] = scopes
	return tok
}

func (as *exampleAS) lookup(tok string) ([]string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	s, ok := as.tokens[tok]
	return s, ok
}

// authorizer is what an application supplies: here it mints a token at
// once; a real one runs the OAuth code flow against
// req.ResourceMetadata.AuthorizationServers, with resource=req.Resource
// and scope=req.Scopes.
func (as *exampleAS) authorizer() client.Authorizer {
	return client.AuthorizerFunc(func(_ context.Context, req client.AuthorizeRequest) (oauth2.TokenSource, error) {
		fmt.Printf("authorize (%s): %v\n", req.Reason, req.Scopes)
		tok := &oauth2.Token{AccessToken: as.mint(req.Scopes), TokenType: "Bearer"}
		return oauth2.StaticTokenSource(tok), nil
	})
}

// exampleMCPServer is a 2026-07-28 MCP server: "tools/call" needs
// files:write, everything else files:read. Its challenges list only the
// operation's scopes; the client accumulates.
func exampleMCPServer(as *exampleAS) (srv *httptest.Server, resource string) {
	mux := http.NewServeMux()
	srv = httptest.NewServer(mux)
	resource = srv.URL + "/mcp"
	h, err := prm.Handler(prm.Metadata{
		Resource:             resource,
		AuthorizationServers: []string{"https://as.example.com"},
		ScopesSupported:      []string{"files:read"},
	})
	if err != nil {
		panic(err)
	}
	inserted, _, err := prm.Paths(resource)
	if err != nil {
		panic(err)
	}
	mux.Handle(inserted, h)
	metadataURL, _ := prm.MetadataURL(resource)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		need := []string{"files:read"}
		if r.Header.Get("Mcp-Method") == "tools/call" {
			need = []string{"files:write"}
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		have, ok := as.lookup(tok)
		if !ok {
			challenge.Write(w, challenge.Challenge{ResourceMetadata: metadataURL, Scope: need})
			return
		}
		for _, s := range need {
			if !slices.Contains(have, s) {
				challenge.Write(w, challenge.StepUp(metadataURL, need...))
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	return srv, resource
}

// An MCP client or gateway puts the Transport into the *http.Client its
// MCP transport uses. With the go-sdk that is
//
//	session, err := mcp.NewClient(impl, nil).Connect(ctx,
//		&mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: httpClient}, nil)
//
// Here plain net/http posts the JSON-RPC messages. The first request has no
// token and gets a 401; tools/call then needs a new scope and gets a 403,
// which the transport turns into a step-up for the union of the scopes.
func Example_mcpClient() {
	as := &exampleAS{}
	srv, resource := exampleMCPServer(as)
	defer srv.Close()

	tr, err := client.New(client.Config{Resource: resource, Authorizer: as.authorizer()})
	if err != nil {
		panic(err)
	}
	httpClient := &http.Client{Transport: tr}

	for _, method := range []string{"initialize", "tools/list", "tools/call"} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q}`, method)
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := httpClient.Do(req)
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(method, resp.StatusCode)
	}
	// Output:
	// authorize (unauthorized): [files:read]
	// initialize 200
	// tools/list 200
	// authorize (insufficient_scope): [files:read files:write]
	// tools/call 200
}

// A server that keeps asking for a scope the user did not grant makes the
// transport stop after one attempt instead of prompting forever.
func Example_stepUpLoop() {
	as := &exampleAS{}
	srv, resource := exampleMCPServer(as)
	defer srv.Close()

	// This user never consents to files:write.
	stingy := client.AuthorizerFunc(func(_ context.Context, req client.AuthorizeRequest) (oauth2.TokenSource, error) {
		fmt.Printf("authorize: %v\n", req.Scopes)
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: as.mint([]string{"files:read"})}), nil
	})
	tr, _ := client.New(client.Config{
		Resource:      resource,
		TokenSource:   oauth2.StaticTokenSource(&oauth2.Token{AccessToken: as.mint([]string{"files:read"})}),
		GrantedScopes: []string{"files:read"},
		Authorizer:    stingy,
	})
	req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{}`))
	req.Header.Set("Mcp-Method", "tools/call")
	_, err := (&http.Client{Transport: tr}).Do(req)

	if errors.Is(err, &client.Error{Reason: "step_up_loop"}) {
		fmt.Println("step-up loop")
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		fmt.Println("server still wants:", ce.Challenge.Scope)
	}
	// Output:
	// authorize: [files:read files:write]
	// step-up loop
	// server still wants: [files:write]
}

// An MCP server that calls an upstream API for the user trades the token it
// received for an upstream token at the authorization server (RFC 8693),
// instead of passing the inbound token through.
func ExampleExchangeToken() {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		fmt.Println("grant_type:", r.PostForm.Get("grant_type"))
		fmt.Println("audience:", r.PostForm.Get("audience"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"upstream-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`)
	}))
	defer as.Close()

	tok, err := client.ExchangeToken(context.Background(), nil, client.ExchangeConfig{
		TokenURL:     as.URL + "/token",
		ClientID:     "mcp-server",
		ClientSecret: "secret",
		Audience:     []string{"calendar-api"},
	}, "inbound-access-token")
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.AccessToken, tok.Extra("issued_token_type"))
	// Output:
	// grant_type: urn:ietf:params:oauth:grant-type:token-exchange
	// audience: calendar-api
	// upstream-token urn:ietf:params:oauth:token-type:access_token
}

// An MCP server uses its own client credentials for upstream calls made on
// its own behalf.
func ExampleUpstreamTokenSource() {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		fmt.Println(r.PostForm.Get("grant_type"), r.PostForm.Get("resource"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"service-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer as.Close()

	src := client.UpstreamTokenSource(context.Background(), client.UpstreamConfig{
		TokenURL:     as.URL + "/token",
		ClientID:     "mcp-server",
		ClientSecret: "secret",
		Resource:     "https://api.example.com/",
	})
	upstream := oauth2.NewClient(context.Background(), src) // an *http.Client for the upstream API
	_ = upstream
	tok, err := src.Token()
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.AccessToken)
	// Output:
	// client_credentials https://api.example.com/
	// service-token
}
