package keyalg

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// TestAssertion: the proxy's assertion keys and their algorithms; weak
// or unknown keys are refused.
func TestAssertion(t *testing.T) {
	ec := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rs := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  crypto.Signer
		want jose.SignatureAlgorithm // "" for refused
	}{
		{"P-256", ec(elliptic.P256()), jose.ES256},
		{"P-384", ec(elliptic.P384()), jose.ES384},
		{"P-521", ec(elliptic.P521()), ""},
		{"Ed25519", ed, jose.EdDSA},
		{"RSA 2048", rs(2048), jose.RS256},
		{"RSA 1024", rs(1024), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Assertion(tt.key.Public())
			if got != tt.want || (err != nil) != (tt.want == "") {
				t.Errorf("Assertion = %q, %v; want %q", got, err, tt.want)
			}
			der, err := x509.MarshalPKCS8PrivateKey(tt.key)
			if err != nil {
				t.Fatal(err)
			}
			k, err := ParsePrivateKey(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
			if err != nil || !k.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.key.Public()) {
				t.Errorf("ParsePrivateKey(PKCS #8) = %v, %v", k, err)
			}
		})
	}
	if _, err := ParsePrivateKey(&pem.Block{Type: "PUBLIC KEY"}); err == nil {
		t.Error("ParsePrivateKey(PUBLIC KEY): no error")
	}
	if _, err := ParsePrivateKey(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}); err == nil {
		t.Error("ParsePrivateKey(garbage): no error")
	}
}
