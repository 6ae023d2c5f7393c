package dpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// now is the pinned clock of the tests.
var now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

const (
	testURI   = "https://mcp.example.com/mcp"
	testToken = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"
)

// keys are generated once per test binary: RSA generation is slow.
var (
	keysOnce sync.Once
	ecKey    *ecdsa.PrivateKey
	ecKey2   *ecdsa.PrivateKey
	ec384    *ecdsa.PrivateKey
	rsaKey   *rsa.PrivateKey
	rsaSmall *rsa.PrivateKey
	edKey    ed25519.PrivateKey
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		ecKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ecKey2, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ec384, _ = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
		rsaSmall, _ = rsa.GenerateKey(rand.Reader, 1024)
		_, edKey, _ = ed25519.GenerateKey(rand.Reader)
	})
}

// jwkOf returns the public JWK of a private key as a JSON object.
func jwkOf(t testing.TB, priv crypto.Signer) map[string]any {
	t.Helper()
	b, err := jose.JSONWebKey{Key: priv.Public()}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func thumb(t testing.TB, priv crypto.Signer) string {
	t.Helper()
	k := jose.JSONWebKey{Key: priv.Public()}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

func ath(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// proofSpec describes one proof; mutate fields of goodSpec to build
// hostile ones.
type proofSpec struct {
	key    crypto.Signer // signs; nil with alg none
	hmac   []byte        // signs HS256 instead
	header map[string]any
	claims map[string]any
	rawHdr string // if set, the header JSON as is
	rawClm string // if set, the claims JSON as is
}

var jtiN int

func goodSpec(t testing.TB) proofSpec {
	t.Helper()
	testKeys(t)
	jtiN++
	return proofSpec{
		key:    ecKey,
		header: map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": jwkOf(t, ecKey)},
		claims: map[string]any{
			"jti": "jti-" + big.NewInt(int64(jtiN)).String(), "htm": "POST", "htu": testURI,
			"iat": now.Unix(), "ath": ath(testToken),
		},
	}
}

func (s proofSpec) clone() proofSpec {
	s.header = maps.Clone(s.header)
	s.claims = maps.Clone(s.claims)
	return s
}

// sign serialises s as a compact JWS, signing with crypto directly so
// that any header, however wrong, can be produced.
func (s proofSpec) sign(t testing.TB) string {
	t.Helper()
	enc := base64.RawURLEncoding
	hj, cj := []byte(s.rawHdr), []byte(s.rawClm)
	var err error
	if s.rawHdr == "" {
		if hj, err = json.Marshal(s.header); err != nil {
			t.Fatal(err)
		}
	}
	if s.rawClm == "" {
		if cj, err = json.Marshal(s.claims); err != nil {
			t.Fatal(err)
		}
	}
	input := enc.EncodeToString(hj) + "." + enc.EncodeToString(cj)
	alg, _ := s.header["alg"].(string)
	var sig []byte
	switch {
	case s.hmac != nil:
		m := hmac.New(sha256.New, s.hmac)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case s.key == nil:
		sig = nil
	default:
		sig = signWith(t, s.key, alg, []byte(input))
	}
	return input + "." + enc.EncodeToString(sig)
}

func signWith(t testing.TB, key crypto.Signer, alg string, input []byte) []byte {
	t.Helper()
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		h := crypto.SHA256
		size := 32
		if k.Curve == elliptic.P384() {
			h, size = crypto.SHA384, 48
		}
		d := h.New()
		d.Write(input)
		r, s, err := ecdsa.Sign(rand.Reader, k, d.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out
	case *rsa.PrivateKey:
		d := sha256.Sum256(input)
		var sig []byte
		var err error
		if alg == "PS256" {
			// RFC 7518 §3.5: the salt is as long as the hash.
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		}
		if err != nil {
			t.Fatal(err)
		}
		return sig
	case ed25519.PrivateKey:
		return ed25519.Sign(k, input)
	}
	t.Fatalf("unsupported key %T", key)
	return nil
}

// newTestVerifier returns a Verifier on the pinned clock.
func newTestVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return now }
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func goodRequest(t testing.TB, proofs ...string) Request {
	t.Helper()
	testKeys(t)
	return Request{Method: "POST", URI: testURI, AccessToken: testToken, JKT: thumb(t, ecKey), Proofs: proofs}
}

var bg = context.Background()

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rawJSON(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func itoa(n int64) string { return big.NewInt(n).String() }
