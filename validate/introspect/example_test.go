package introspect_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// exampleAS is a minimal RFC 7662 endpoint: it knows one opaque token.
func exampleAS(now time.Time) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-server" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.PostFormValue("token") != "opaque-abc" {
			_, _ = w.Write([]byte(`{"active":false}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"active": true, "iss": "https://as.example.com", "aud": "https://mcp.example.com/mcp",
			"sub": "alice", "client_id": "app-1", "scope": "mcp:tools notes:read",
			"exp": now.Add(time.Hour).Unix(), "token_type": "Bearer",
		})
	}))
}

func Example() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	as := exampleAS(now)
	defer as.Close()

	in, err := introspect.New(introspect.Config{
		Issuer:       "https://as.example.com",
		Endpoint:     as.URL + "/introspect", // leave empty to discover it from the issuer's metadata
		Audiences:    []string{"https://mcp.example.com/mcp"},
		ClientID:     "mcp-server",
		ClientSecret: "s3cret",
		Now:          func() time.Time { return now },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	claims, err := in.Validate(context.Background(), "opaque-abc")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(claims.Subject, claims.ClientID, claims.Scopes, claims.HasScope("notes:read"))

	_, err = in.Validate(context.Background(), "revoked-token")
	fmt.Println(errors.Is(err, validate.Error{Reason: "inactive"}))
	// Output:
	// alice app-1 [mcp:tools notes:read] true
	// true
}

func ExampleNewHybrid() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	as := exampleAS(now)
	defer as.Close()

	// The same authorization server also issues JWT access tokens.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwtValidator, _ := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: "https://as.example.com", Keys: &validate.StaticKeys{Set: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256"}}}}},
		Audiences: []string{"https://mcp.example.com/mcp"},
		Now:       func() time.Time { return now },
	})
	in, _ := introspect.New(introspect.Config{
		Issuer: "https://as.example.com", Endpoint: as.URL + "/introspect", Audiences: []string{"https://mcp.example.com/mcp"},
		ClientID: "mcp-server", ClientSecret: "s3cret", Now: func() time.Time { return now },
	})
	h, _ := introspect.NewHybrid(jwtValidator, in)

	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	claims := map[string]any{
		"iss": "https://as.example.com", "aud": "https://mcp.example.com/mcp", "sub": "bob", "client_id": "app-2",
		"jti": "j1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	jwtToken, _ := jwt.Signed(signer).Claims(claims).Serialize()

	for _, tok := range []string{jwtToken, "opaque-abc"} {
		c, err := h.Validate(context.Background(), tok)
		fmt.Println(c.Subject, err)
	}
	// Output:
	// bob <nil>
	// alice <nil>
}

// ExampleClientCredentials authenticates to an introspection endpoint that
// wants a bearer token, obtained with the client credentials grant; every
// token request runs under the introspection request's context.
func ExampleClientCredentials() {
	ts := introspect.ClientCredentials(clientcredentials.Config{
		ClientID:     "mcp-server",
		ClientSecret: "from-your-secret-store",
		TokenURL:     "https://auth.example.com/oauth2/token",
	}, nil)
	in, err := introspect.New(introspect.Config{
		Issuer:      "https://auth.example.com",
		Endpoint:    "https://auth.example.com/oauth2/introspect",
		Audiences:   []string{"https://mcp.example.com/mcp"},
		AuthMethod:  "bearer",
		TokenSource: ts,
	})
	fmt.Println(in != nil, err)
	// Output: true <nil>
}
