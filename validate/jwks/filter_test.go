package jwks

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/go-jose/go-jose/v4"
)

// testKeys are generated once per test binary.
type testKeys struct {
	rsa2048, rsa1024 *rsa.PrivateKey
	p256, p384, p521 *ecdsa.PrivateKey
	ed               ed25519.PrivateKey
}

func genKeys(t *testing.T) testKeys {
	t.Helper()
	var k testKeys
	var err error
	if k.rsa2048, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa1024, err = rsa.GenerateKey(rand.Reader, 1024); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dst   **ecdsa.PrivateKey
		curve elliptic.Curve
	}{{&k.p256, elliptic.P256()}, {&k.p384, elliptic.P384()}, {&k.p521, elliptic.P521()}} {
		if *c.dst, err = ecdsa.GenerateKey(c.curve, rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	return k
}

// jwkJSON marshals a go-jose key and applies edits to its JSON members.
func jwkJSON(t *testing.T, k jose.JSONWebKey, edit map[string]any) string {
	t.Helper()
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for name, v := range edit {
		if v == nil {
			delete(m, name)
		} else {
			m[name] = v
		}
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSetFilters(t *testing.T) {
	k := genKeys(t)
	b64 := base64.RawURLEncoding.EncodeToString
	big8192 := new(big.Int).Lsh(big.NewInt(1), 8191)
	big8192.Add(big8192, big.NewInt(1))
	pub := func(key any, kid, alg string) jose.JSONWebKey {
		return jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: alg, Use: "sig"}
	}
	tests := []struct {
		name   string
		json   string
		usable bool
		warn   bool
	}{
		{name: "rsa-2048", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "rsa", "RS256"), nil), usable: true},
		{name: "rsa-2048 ps256", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "rsa-ps", "PS256"), nil), usable: true},
		{name: "rsa-2048 no alg no use", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "rsa-bare", ""), map[string]any{"use": nil}), usable: true},
		{name: "p-256", json: jwkJSON(t, pub(&k.p256.PublicKey, "p256", "ES256"), nil), usable: true},
		{name: "p-384", json: jwkJSON(t, pub(&k.p384.PublicKey, "p384", "ES384"), nil), usable: true},
		{name: "p-521", json: jwkJSON(t, pub(&k.p521.PublicKey, "p521", "ES512"), nil), usable: true},
		{name: "ed25519", json: jwkJSON(t, pub(k.ed.Public(), "ed", "EdDSA"), nil), usable: true},
		{name: "ed25519 fully specified alg", json: jwkJSON(t, pub(k.ed.Public(), "ed-fs", "Ed25519"), nil), usable: true},
		{name: "key_ops verify", json: jwkJSON(t, pub(&k.p256.PublicKey, "ops-verify", "ES256"), map[string]any{"key_ops": []string{"verify"}, "use": nil}), usable: true},

		{name: "use enc", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "enc", "RSA-OAEP"), map[string]any{"use": "enc"})},
		{name: "use unknown", json: jwkJSON(t, pub(&k.p256.PublicKey, "use-x", "ES256"), map[string]any{"use": "foo"})},
		{name: "key_ops encrypt", json: jwkJSON(t, pub(&k.p256.PublicKey, "ops-enc", "ES256"), map[string]any{"key_ops": []string{"encrypt"}})},
		{name: "key_ops empty", json: jwkJSON(t, pub(&k.p256.PublicKey, "ops-empty", "ES256"), map[string]any{"key_ops": []string{}})},
		{name: "no kid", json: jwkJSON(t, pub(&k.p256.PublicKey, "", "ES256"), nil), usable: true}, // RFC 7517 §4.5: kid is optional
		{name: "oct", json: `{"kty":"oct","kid":"hmac","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0","alg":"HS256"}`},
		{name: "private ec", json: jwkJSON(t, pub(k.p256, "priv-ec", "ES256"), nil), warn: true},
		{name: "private rsa", json: jwkJSON(t, pub(k.rsa2048, "priv-rsa", "RS256"), nil), warn: true},
		{name: "private ed25519", json: jwkJSON(t, pub(k.ed, "priv-ed", "EdDSA"), nil), warn: true},
		{name: "rsa-1024", json: jwkJSON(t, pub(&k.rsa1024.PublicKey, "weak", "RS256"), nil), warn: true},
		{name: "rsa-8193 over go-jose cap", json: `{"kty":"RSA","kid":"huge","n":"` + b64(big8192.Bytes()) + `","e":"AQAB"}`, warn: true},
		{name: "rsa bad modulus", json: `{"kty":"RSA","kid":"bad-n","n":"!!!","e":"AQAB"}`, warn: true},
		{name: "ec point not on curve", json: `{"kty":"EC","kid":"bad-ec","crv":"P-256","x":"AQ","y":"AQ"}`, warn: true},
		{name: "secp256k1", json: `{"kty":"EC","kid":"k1curve","crv":"secp256k1","x":"AQ","y":"AQ"}`, warn: true},
		{name: "x25519", json: `{"kty":"OKP","kid":"x","crv":"X25519","x":"` + b64(make([]byte, 32)) + `"}`, warn: true},
		{name: "unknown kty", json: `{"kty":"XYZ","kid":"xyz"}`, warn: true},
		{name: "missing kty", json: `{"kid":"nokty"}`, warn: true},
		{name: "alg mismatch: ES256 on RSA", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "mis", "RS256"), map[string]any{"alg": "ES256"}), warn: true},
		{name: "alg mismatch: ES384 on P-256", json: jwkJSON(t, pub(&k.p256.PublicKey, "mis-curve", "ES256"), map[string]any{"alg": "ES384"}), warn: true},
		{name: "alg HS256 on RSA", json: jwkJSON(t, pub(&k.rsa2048.PublicKey, "hs", "RS256"), map[string]any{"alg": "HS256"}), warn: true},
		{name: "alg none", json: jwkJSON(t, pub(&k.p256.PublicKey, "none", "ES256"), map[string]any{"alg": "none"}), warn: true},
		{name: "kid not a string", json: `{"kty":"EC","kid":7}`, warn: true},
		{name: "not an object", json: `"key"`, warn: true},
	}
	var all []string
	for _, tt := range tests {
		all = append(all, tt.json)
		t.Run(tt.name, func(t *testing.T) {
			pk, d := parseKey(json.RawMessage(tt.json))
			if got := d == nil; got != tt.usable {
				t.Fatalf("usable = %v (%+v), want %v", got, d, tt.usable)
			}
			if d != nil {
				if d.warn != tt.warn && tt.warn {
					t.Errorf("dropped %q without a warning", d.reason)
				}
				return
			}
			if !pk.jwk.IsPublic() || !pk.jwk.Valid() {
				t.Errorf("served key is not a valid public key: %T", pk.jwk.Key)
			}
			var want map[string]any
			_ = json.Unmarshal([]byte(tt.json), &want)
			if kid, _ := want["kid"].(string); pk.jwk.KeyID != kid {
				t.Errorf("kid = %q, want %v", pk.jwk.KeyID, want["kid"])
			}
			if alg, _ := want["alg"].(string); pk.jwk.Algorithm != alg {
				t.Errorf("alg = %q, want %q", pk.jwk.Algorithm, alg)
			}
		})
	}

	// The whole mix as one set: bad keys do not spoil good ones.
	set, good, dropped, err := parseSet([]byte(`{"keys":[` + strings.Join(all, ",") + `]}`))
	if err != nil {
		t.Fatalf("parseSet = %v", err)
	}
	var kids []string
	for _, pk := range good {
		kids = append(kids, pk.jwk.KeyID)
	}
	slices.Sort(kids)
	want := []string{"", "ed", "ed-fs", "ops-verify", "p256", "p384", "p521", "rsa", "rsa-bare", "rsa-ps"}
	if !slices.Equal(kids, want) {
		t.Errorf("usable kids = %q, want %q", kids, want)
	}
	if set.n != len(want) || len(dropped) != len(tests)-len(want) {
		t.Errorf("set.n = %d, dropped = %d; want %d, %d", set.n, len(dropped), len(want), len(tests)-len(want))
	}
}

func TestParseSetDuplicateKid(t *testing.T) {
	a, b := ecJWK(t, "same"), ecJWK(t, "same")
	body, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{a, b}})
	set, _, _, err := parseSet(body)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(set.byKID["same"]); got != 2 {
		t.Errorf("keys under a shared kid = %d, want 2", got)
	}
}

func TestParseSetErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{name: "empty", body: "", wantErr: errInvalidSet},
		{name: "not json", body: "<html>", wantErr: errInvalidSet},
		{name: "array", body: "[]", wantErr: errInvalidSet},
		{name: "no keys", body: "{}", wantErr: errInvalidSet},
		{name: "keys null", body: `{"keys":null}`, wantErr: errInvalidSet},
		{name: "keys object", body: `{"keys":{}}`, wantErr: errInvalidSet},
		{name: "keys empty", body: `{"keys":[]}`, wantErr: errNoUsableKeys},
		{name: "keys all bad", body: `{"keys":[1,"x",{},{"kty":"oct","kid":"a","k":"AA"}]}`, wantErr: errNoUsableKeys},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, err := parseSet([]byte(tt.body)); !errors.Is(err, tt.wantErr) {
				t.Errorf("parseSet(%q) = %v, want %v", tt.body, err, tt.wantErr)
			}
		})
	}
}

func TestFilteredSetEndToEnd(t *testing.T) {
	k := genKeys(t)
	good := jose.JSONWebKey{Key: &k.rsa2048.PublicKey, KeyID: "good", Algorithm: "RS256", Use: "sig"}
	f := newFake(t)
	f.setRaw("application/jwk-set+json", []byte(`{"keys":[`+strings.Join([]string{
		jwkJSON(t, jose.JSONWebKey{Key: &k.rsa2048.PublicKey, KeyID: "enc", Use: "enc"}, nil),
		`{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}`,
		jwkJSON(t, jose.JSONWebKey{Key: &k.rsa1024.PublicKey, KeyID: "weak", Algorithm: "RS256"}, nil),
		jwkJSON(t, jose.JSONWebKey{Key: &k.p256.PublicKey, Algorithm: "ES256"}, nil), // no kid
		jwkJSON(t, jose.JSONWebKey{Key: k.p256, KeyID: "private", Algorithm: "ES256"}, nil),
		`{"kty":"RSA","kid":"broken","n":"%%%","e":"AQAB"}`,
		jwkJSON(t, good, nil),
		jwkJSON(t, jose.JSONWebKey{Key: k.ed.Public(), KeyID: "ed", Algorithm: "EdDSA"}, nil),
	}, ",")+`]}`))
	cfg := testConfig(t, f, newClock())
	cfg.Storage = jwkset.NewMemoryStorage()
	s := newSource(t, cfg)

	ks, err := s.Keys(t.Context(), "good")
	if err != nil || len(ks) != 1 {
		t.Fatalf("Keys(good) = %v, %v", ks, err)
	}
	if pk, ok := ks[0].Key.(*rsa.PublicKey); !ok || !pk.Equal(&k.rsa2048.PublicKey) {
		t.Errorf("Keys(good) returned %T", ks[0].Key)
	}
	for _, kid := range []string{"enc", "hmac", "weak", "private", "broken"} {
		if _, err := s.Keys(t.Context(), kid); err == nil {
			t.Errorf("Keys(%q) succeeded; the key must be filtered", kid)
		}
	}
	// A token without kid gets every usable key, the one published without
	// a kid included, in the set's order.
	all, err := s.Keys(t.Context(), "")
	if err != nil || len(all) != 3 || all[0].KeyID != "" || all[1].KeyID != "good" || all[2].KeyID != "ed" {
		t.Errorf("Keys(\"\") = %v, %v; want the kid-less key, good and ed", all, err)
	}
	if st := s.stats(); st.Keys != 3 {
		t.Errorf("stats.Keys = %d, want 3", st.Keys)
	}
	stored, err := cfg.Storage.KeyReadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, j := range stored {
		kids = append(kids, j.Marshal().KID)
	}
	slices.Sort(kids)
	if !slices.Equal(kids, []string{"", "ed", "good"}) {
		t.Errorf("storage kids = %q, want [\"\" ed good]", kids)
	}
}
