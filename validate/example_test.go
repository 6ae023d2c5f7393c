package validate_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/validate"
)

// now is the pinned clock of the examples.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// issuer stands in for an authorization server: it signs RFC 9068 access
// tokens and publishes its public key.
type issuer struct {
	key  *ecdsa.PrivateKey
	keys *validate.StaticKeys
}

func newIssuer() *issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	pub := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "key-1", Algorithm: string(jose.ES256), Use: "sig"}
	return &issuer{key: key, keys: &validate.StaticKeys{Set: []jose.JSONWebKey{pub}}}
}

func (is *issuer) sign(claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "key-1")
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, opts)
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

func accessToken(aud string, exp time.Time) map[string]any {
	return map[string]any{
		"iss": "https://as.example.com", "sub": "alice", "aud": aud,
		"exp": exp.Unix(), "iat": now.Unix(), "jti": "4f1c",
		"client_id": "https://client.example/meta.json", "scope": "tools:read tools:call",
		"org": "acme",
	}
}

func Example() {
	as := newIssuer()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: "https://as.example.com", Keys: as.keys}},
		Audiences: []string{"https://mcp.example.com/mcp"},
		Now:       func() time.Time { return now }, // omit in production
	})
	if err != nil {
		panic(err)
	}
	raw := as.sign(accessToken("https://mcp.example.com/mcp", now.Add(time.Hour)))

	claims, err := v.Validate(context.Background(), raw)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println(claims.Subject, claims.ClientID)
	fmt.Println(claims.Scopes, claims.HasScope("tools:call"))
	fmt.Println(claims.Expiry)
	// Output:
	// alice https://client.example/meta.json
	// [tools:read tools:call] true
	// 2026-01-02 04:04:05 +0000 UTC
}

// Errors wrap one sentinel each, for errors.Is, and never quote the token.
func ExampleValidator_Validate_errors() {
	as := newIssuer()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: "https://as.example.com", Keys: as.keys}},
		Audiences: []string{"https://mcp.example.com/mcp"},
		Now:       func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	for _, raw := range []string{
		as.sign(accessToken("https://mcp.example.com/mcp", now.Add(-time.Hour))),
		as.sign(accessToken("https://other.example.com", now.Add(time.Hour))),
		"not.a.token",
	} {
		_, err := v.Validate(context.Background(), raw)
		switch {
		case errors.Is(err, validate.Error{Reason: "expired"}):
			fmt.Println("expired:", err)
		case errors.Is(err, validate.Error{Reason: "audience"}):
			fmt.Println("not for us:", err)
		case errors.Is(err, validate.ErrKeysUnavailable):
			fmt.Println("retry later:", err)
		default:
			fmt.Println("invalid:", err)
		}
	}
	// Output:
	// expired: validate: token expired
	// not for us: validate: wrong audience: no configured audience in aud
	// invalid: validate: malformed token: segment is not canonical unpadded base64url
}

// Claims.Decode reads claims this package does not interpret.
func ExampleClaims_Decode() {
	as := newIssuer()
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: "https://as.example.com", Keys: as.keys}},
		Audiences:   []string{"https://mcp.example.com/mcp"},
		TenantClaim: "org",
		Now:         func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	claims, err := v.Validate(context.Background(), as.sign(accessToken("https://mcp.example.com/mcp", now.Add(time.Hour))))
	if err != nil {
		panic(err)
	}
	var extra struct {
		JTI string `json:"jti"`
	}
	if err := claims.Decode(&extra); err != nil {
		panic(err)
	}
	fmt.Println(claims.Tenant, extra.JTI)
	// Output: acme 4f1c
}

// A Config without issuer, audience or key source is refused: no zero value
// turns a check off.
func ExampleNew_config() {
	_, err := validate.New(validate.Config{
		Issuers: []validate.Issuer{{Issuer: "https://as.example.com", Keys: &validate.StaticKeys{}}},
	})
	fmt.Println(err, errors.Is(err, validate.ErrConfig))
	// Output: validate: invalid config: no audiences true
}
