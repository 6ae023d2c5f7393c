package devas_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

// Example runs the authorization code flow with PKCE against a
// development server, as an MCP client would, with a pre-registered
// public client.
func Example() {
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	as, err := devas.New(devas.Config{
		Issuer:      issuer,
		Resources:   []string{"http://127.0.0.1:8080/mcp"},
		Scopes:      []string{"tools:read"},
		AutoApprove: true, // tests only: no consent page
		Clients: []cimd.Client{{Document: cimd.Document{
			ClientID:                "my-client",
			RedirectURIs:            []string{"http://127.0.0.1/callback"},
			TokenEndpointAuthMethod: "none",
		}}},
	})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = as
	srv.Start()
	defer srv.Close()

	// Authorization request (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
	verifier := "a-long-random-code-verifier-of-at-least-43-characters"
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {"my-client"},
		"redirect_uri":          {"http://127.0.0.1:49152/callback"}, // any loopback port
		"state":                 {"s1"},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"resource":              {"http://127.0.0.1:8080/mcp"},
		"scope":                 {"tools:read"},
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(issuer + "/authorize?" + q.Encode())
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	fmt.Println("redirect to:", loc.Host+loc.Path)
	fmt.Println("state:", loc.Query().Get("state"))
	fmt.Println("iss matches:", loc.Query().Get("iss") == issuer)

	// Token request.
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {loc.Query().Get("code")},
		"code_verifier": {verifier},
		"redirect_uri":  {"http://127.0.0.1:49152/callback"},
		"client_id":     {"my-client"},
		"resource":      {"http://127.0.0.1:8080/mcp"},
	}
	resp, err = http.Post(issuer+"/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var tok struct {
		TokenType string `json:"token_type"`
		ExpiresIn int    `json:"expires_in"`
		Scope     string `json:"scope"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	fmt.Println(resp.StatusCode, tok.TokenType, tok.ExpiresIn, tok.Scope)
	// Output:
	// redirect to: 127.0.0.1:49152/callback
	// state: s1
	// iss matches: true
	// 200 Bearer 3600 tools:read
}

// ExampleServer_IssueToken mints a token directly, for tests or for a curl
// walk-through: curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/mcp
func ExampleServer_IssueToken() {
	as, err := devas.New(devas.Config{
		Issuer:    "http://127.0.0.1:9000",
		Resources: []string{"http://127.0.0.1:8080/mcp"},
	})
	if err != nil {
		panic(err)
	}
	raw, err := as.IssueToken("alice", "tenant-b", "curl", "http://127.0.0.1:8080/mcp", []string{"tools:read"})
	if err != nil {
		panic(err)
	}

	tok, _ := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	var c struct {
		Sub      string `json:"sub"`
		Aud      string `json:"aud"`
		Tenant   string `json:"tenant"`
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
	}
	if err := tok.Claims(jose.JSONWebKeySet{Keys: as.PublicKeys()}, &c); err != nil {
		panic(err)
	}
	fmt.Println(tok.Headers[0].ExtraHeaders["typ"], c.Sub, c.Tenant, c.ClientID, c.Aud, c.Scope)
	// Output: at+jwt alice tenant-b curl http://127.0.0.1:8080/mcp tools:read
}
