package jws

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// TestVerifyPSSSalt: RFC 7518 §3.5 fixes the PSS salt at the hash length;
// a signature with another salt (crypto/rsa's default, the maximum) is
// refused, for access tokens and DPoP proofs alike.
func TestVerifyPSSSalt(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	input := []byte("e30.e30")
	d := sha256.Sum256(input)
	alg, _ := LookupAlg("PS256")
	for _, tt := range []struct {
		name string
		salt int
		want bool
	}{
		{"hash length", rsa.PSSSaltLengthEqualsHash, true},
		{"maximum", rsa.PSSSaltLengthAuto, false},
		{"20 bytes", 20, false},
	} {
		sig, err := rsa.SignPSS(rand.Reader, k, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: tt.salt})
		if err != nil {
			t.Fatal(err)
		}
		if got := Verify(&alg, &k.PublicKey, input, sig, nil); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestUsableKey: a key verifies only the algorithms of its type, curve and
// size, and only as a signing key whose "alg", if any, names the algorithm.
func TestUsableKey(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	es256, _ := LookupAlg("ES256")
	es384, _ := LookupAlg("ES384")
	rs256, _ := LookupAlg("RS256")
	for _, tt := range []struct {
		name string
		k    jose.JSONWebKey
		alg  *Alg
		want bool
	}{
		{"P-256 for ES256", jose.JSONWebKey{Key: &ec.PublicKey}, &es256, true},
		{"P-256 for ES384", jose.JSONWebKey{Key: &ec.PublicKey}, &es384, false},
		{"EC for RS256", jose.JSONWebKey{Key: &ec.PublicKey}, &rs256, false},
		{"use enc", jose.JSONWebKey{Key: &ec.PublicKey, Use: "enc"}, &es256, false},
		{"alg mismatch", jose.JSONWebKey{Key: &ec.PublicKey, Algorithm: "ES384"}, &es256, false},
		{"private key", jose.JSONWebKey{Key: ec}, &es256, false},
	} {
		if _, got := UsableKey(&tt.k, tt.alg, ""); got != tt.want {
			t.Errorf("%s: UsableKey = %v, want %v", tt.name, got, tt.want)
		}
	}
	if _, ok := LookupAlg("HS256"); ok {
		t.Error(`LookupAlg("HS256") ok, want false`)
	}
	if _, ok := LookupAlg("none"); ok {
		t.Error(`LookupAlg("none") ok, want false`)
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want bool
	}{
		{"a.b.c", true},
		{"a.b", false},
		{"a.b.c.d.e", false},
		{"a.b\n.c", false},
		{"a.b.c\r", false},
	} {
		if _, _, got := Split(tt.raw); got != tt.want {
			t.Errorf("Split(%q) ok = %v, want %v", tt.raw, got, tt.want)
		}
	}
}
