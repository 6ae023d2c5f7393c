package dpop_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate/dpop"
)

// Example checks a proof a client made for a POST with a DPoP-bound access
// token, then shows that the same proof is refused the second time.
func Example() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	v, err := dpop.New(dpop.Config{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}

	// The client's key and its proof (what package client does for you).
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub := jose.JSONWebKey{Key: &key.PublicKey}
	tp, _ := pub.Thumbprint(crypto.SHA256)
	jkt := base64.RawURLEncoding.EncodeToString(tp) // the token's cnf.jkt
	token := "the.access.token"
	ath := sha256.Sum256([]byte(token))
	claims, _ := json.Marshal(map[string]any{
		"jti": "e1j3V_bKic8-LAEB", "htm": "POST", "htu": "https://mcp.example.com/mcp",
		"iat": now.Unix(), "ath": base64.RawURLEncoding.EncodeToString(ath[:]),
	})
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	jws, _ := signer.Sign(claims)
	proof, _ := jws.CompactSerialize()

	req := dpop.Request{
		Method: "POST", URI: "https://mcp.example.com/mcp",
		AccessToken: token, JKT: jkt, Proofs: []string{proof},
	}
	p, err := v.Verify(context.Background(), req)
	fmt.Println(err, p.JKT == jkt)
	_, err = v.Verify(context.Background(), req)
	fmt.Println(errors.Is(err, dpop.Error{Reason: "replay"}))
	// Output:
	// <nil> true
	// true
}
