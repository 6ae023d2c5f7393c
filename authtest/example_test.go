package authtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/authtest"
)

// exampleT stands in for the *testing.T a real test passes. Only the
// methods authtest calls are implemented.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleT) finish() {
	for n := len(t.cleanups) - 1; n >= 0; n-- {
		t.cleanups[n]()
	}
}

// A resource server's test: mint a token, fetch the issuer's JWKS the way a
// key source would, and check the token as a validator would, with the
// issuer's clock.
func Example() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: "https://mcp.example.com/mcp"})
	raw := iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools", "mcp:admin"}})

	resp, err := iss.Client.Get(iss.JWKSURL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var keys jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&keys); err != nil {
		panic(err)
	}

	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA})
	if err != nil {
		panic(err)
	}
	var claims jwt.Claims
	var extra struct {
		Scope string `json:"scope"`
	}
	if err := tok.Claims(&keys, &claims, &extra); err != nil {
		panic(err)
	}
	err = claims.Validate(jwt.Expected{
		Issuer:      iss.URL,
		AnyAudience: jwt.Audience{"https://mcp.example.com/mcp"},
		Time:        iss.Now(),
	})
	fmt.Println("typ:", tok.Headers[0].ExtraHeaders["typ"], "kid:", tok.Headers[0].KeyID)
	fmt.Println("sub:", claims.Subject, "scope:", extra.Scope)
	fmt.Println("valid:", err == nil)
	// Output:
	// typ: at+jwt kid: es256-1
	// sub: user-1 scope: mcp:tools mcp:admin
	// valid: true
}

// The constructors break one property each; here the token expired an hour
// before the issuer's (pinned) clock.
func ExampleExpired() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	raw := iss.Token(t, authtest.Expired())

	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		panic(err)
	}
	var claims jwt.Claims
	if err := tok.Claims(&jose.JSONWebKeySet{Keys: iss.Keys()}, &claims); err != nil {
		panic(err)
	}
	fmt.Println("now:", iss.Now().Format(time.RFC3339))
	fmt.Println("exp:", claims.Expiry.Time().UTC().Format(time.RFC3339))
	fmt.Println(claims.Validate(jwt.Expected{Time: iss.Now()}))
	// Output:
	// now: 2026-01-02T03:04:05Z
	// exp: 2026-01-02T02:04:05Z
	// go-jose/go-jose/jwt: validation failed, token is expired (exp)
}

// Discovery documents are served at every URL an MCP client probes, in
// order.
func ExampleIssuer_metadataURLs() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/tenant1", DisableRFC8414: true})
	for _, u := range iss.MetadataURLs {
		resp, err := iss.Client.Get(u)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, strings.TrimPrefix(u, strings.TrimSuffix(iss.URL, "/tenant1")))
	}
	// Output:
	// 404 /.well-known/oauth-authorization-server/tenant1
	// 200 /.well-known/openid-configuration/tenant1
	// 200 /tenant1/.well-known/openid-configuration
}

// Key rotation: a new private key signs, the old one stays published.
func ExampleIssuer_AddKey() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	iss.AddKey(authtest.GenerateKey(jose.ES256, "es256-2"))
	var kids []string
	for _, k := range iss.Keys() {
		kids = append(kids, k.KeyID)
	}
	fmt.Println(strings.Join(kids, " "))
	iss.RemoveKey("es256-1")
	tok, err := jwt.ParseSigned(iss.Token(t, authtest.Token{}), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(iss.Keys()), tok.Headers[0].KeyID)
	// Output:
	// es256-1 rs256-1 eddsa-1 es256-2
	// 3 es256-2
}

// Faults make the JWKS endpoint fail, and the counters show what a client
// fetched.
func ExampleIssuer_SetFault() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{RetryAfter: 30 * time.Second})
	iss.SetFault("too-many-requests", iss.JWKSURL)
	resp, err := iss.Client.Get(iss.JWKSURL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"))

	iss.SetFault("", iss.JWKSURL)
	resp, err = iss.Client.Get(iss.JWKSURL)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, iss.Requests(iss.JWKSURL))
	// Output:
	// 429 30
	// 200 2
}

// Introspection (RFC 7662) of an opaque token.
func ExampleIssuer_Token_opaque() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	opaque := iss.Token(t, authtest.Token{Opaque: true, Subject: "alice"})

	req, _ := http.NewRequest(http.MethodPost, iss.IntrospectionURL, strings.NewReader("token="+opaque))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(iss.IntrospectionClientID, iss.IntrospectionSecret)
	resp, err := iss.Client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var body struct {
		Active  bool   `json:"active"`
		Subject string `json:"sub"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	fmt.Println(body.Active, body.Subject)
	// Output: true alice
}

// A token that breaks several properties at once: a constructor's result
// with more fields set.
func ExampleToken() {
	t := &exampleT{}
	defer t.finish()

	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	spec := authtest.WrongAudience()
	spec.Subject = "mallory"
	spec.Claims = map[string]any{"tenant": nil} // deleted
	tok, err := jwt.ParseSigned(iss.Token(t, spec), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		panic(err)
	}
	var claims map[string]any
	if err := tok.Claims(&jose.JSONWebKeySet{Keys: iss.Keys()}, &claims); err != nil {
		panic(err)
	}
	_, hasTenant := claims["tenant"]
	fmt.Println(claims["sub"], claims["aud"], hasTenant)
	// Output: mallory https://wrong-audience.example false
}
