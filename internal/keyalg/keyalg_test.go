package keyalg

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

func TestDefault(t *testing.T) {
	ec := func(c elliptic.Curve) crypto.PublicKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k.Public()
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ed, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pub  crypto.PublicKey
		want jose.SignatureAlgorithm
	}{
		{"P-256", ec(elliptic.P256()), jose.ES256},
		{"P-384", ec(elliptic.P384()), jose.ES384},
		{"P-521", ec(elliptic.P521()), jose.ES512},
		{"P-224", ec(elliptic.P224()), ""},
		{"RSA", rk.Public(), jose.RS256},
		{"Ed25519", ed, jose.EdDSA},
		{"private key", rk, ""},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		if got := Default(tt.pub); got != tt.want {
			t.Errorf("%s: Default = %q, want %q", tt.name, got, tt.want)
		}
	}
}
