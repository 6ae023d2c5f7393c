package validate_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
)

// The audience fallback folds only ASCII case: KELVIN SIGN (U+212A), which
// Unicode lower-cases to "k", names another resource and is refused.
func TestAudienceUnicodeLookalikeRefused(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const iss = "https://as.example"
	pub := jose.JSONWebKey{Key: &priv.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss, Keys: &validate.StaticKeys{Set: []jose.JSONWebKey{pub}}}},
		Audiences: []string{"https://mcp.kiwi.example/mcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	other := "https://mcp.\u212Aiwi.example/mcp"
	payload, _ := json.Marshal(map[string]any{"iss": iss, "sub": "alice", "aud": other,
		"exp": now + 600, "iat": now, "jti": "j1", "client_id": "c1"})
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Validate(t.Context(), tok)
	if err == nil {
		t.Fatalf("token for audience %q accepted (aud=%q)", other, c.Audience)
	}
	if !errors.Is(err, validate.Error{Reason: "audience"}) {
		t.Fatalf("err = %v, want errAudience", err)
	}
}
