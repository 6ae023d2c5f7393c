package asmeta_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/asmeta"
)

func ExampleWellKnownURLs() {
	urls, err := asmeta.WellKnownURLs("https://auth.example.com/tenant1")
	if err != nil {
		panic(err)
	}
	for _, u := range urls {
		fmt.Println(u)
	}
	// Output:
	// https://auth.example.com/.well-known/oauth-authorization-server/tenant1
	// https://auth.example.com/.well-known/openid-configuration/tenant1
	// https://auth.example.com/tenant1/.well-known/openid-configuration
}

func ExampleDiscover() {
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tenant1/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"response_types_supported":["code"]}`, issuer, issuer+"/keys")
	}))
	defer srv.Close()
	issuer = srv.URL + "/tenant1" // loopback http is accepted for local development

	// Discover without a client refuses loopback addresses; a test or a
	// local development setup allows them explicitly.
	hc := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	md, err := asmeta.Discover(context.Background(), hc, issuer)
	if err != nil {
		panic(err)
	}
	fmt.Println(md.Issuer == issuer, md.JWKSURI == issuer+"/keys")
	// Output: true true
}

func ExampleDiscover_mixUp() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"issuer":"https://honest.example","response_types_supported":["code"]}`)
	}))
	defer srv.Close()

	hc := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	_, err := asmeta.Discover(context.Background(), hc, srv.URL)
	fmt.Println(errors.Is(err, asmeta.ErrIssuerMismatch))
	// Output: true
}

func ExampleNewGuardedClient() {
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"response_types_supported":["code"]}`, issuer)
	}))
	defer srv.Close()
	issuer = srv.URL

	// Without a client, Discover refuses non-public addresses: an issuer
	// named by a server cannot make the client probe its own host.
	_, err := asmeta.Discover(context.Background(), nil, issuer)
	fmt.Println(errors.Is(err, asmeta.ErrNotFound))

	// Tests allow loopback explicitly.
	hc := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	md, err := asmeta.Discover(context.Background(), hc, issuer)
	fmt.Println(md.Issuer == issuer, err)
	// Output:
	// true
	// true <nil>
}
