package validate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jws"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Fixed test values. Fixtures never call time.Now.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	testIss  = "https://as.example.com"
	testIss2 = "https://other-as.example.com"
	testAud  = "https://mcp.example.com/mcp"
)

// testKey is a private signing key with the metadata a JWKS entry carries.
type testKey struct {
	alg  jose.SignatureAlgorithm
	kid  string
	priv crypto.Signer
}

// jwk returns the public JWK of k, as a key source publishes it.
func (k *testKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// testKeys holds one key per algorithm family, generated once per test
// binary because RSA generation is slow.
type testKeys struct {
	es256, es384, es512, rs256, ps256, ed, rs1024, es256b *testKey
}

var keysOnce = sync.OnceValue(func() *testKeys {
	ec := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	rsaKey := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		return k
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	rs := rsaKey(2048)
	return &testKeys{
		es256:  &testKey{jose.ES256, "es256", ec(elliptic.P256())},
		es384:  &testKey{jose.ES384, "es384", ec(elliptic.P384())},
		es512:  &testKey{jose.ES512, "es512", ec(elliptic.P521())},
		rs256:  &testKey{jose.RS256, "rs256", rs},
		ps256:  &testKey{jose.PS256, "ps256", rs},
		ed:     &testKey{jose.EdDSA, "ed", ed},
		rs1024: &testKey{jose.RS256, "rs1024", rsaKey(1024)},
		es256b: &testKey{jose.ES256, "es256b", ec(elliptic.P256())}, // issuer 2
	}
})

func keys(t testing.TB) *testKeys {
	t.Helper()
	return keysOnce()
}

// primarySet is the key set of testIss: every key but es256b.
func (k *testKeys) primarySet() *StaticKeys {
	return &StaticKeys{Set: []jose.JSONWebKey{
		k.es256.jwk(), k.es384.jwk(), k.es512.jwk(), k.rs256.jwk(), k.ps256.jwk(), k.ed.jwk(), k.rs1024.jwk(),
	}}
}

// baseClaims is a valid RFC 9068 claims set at testNow.
func baseClaims() map[string]any {
	return map[string]any{
		"iss":       testIss,
		"sub":       "alice",
		"aud":       testAud,
		"exp":       testNow.Add(time.Hour).Unix(),
		"iat":       testNow.Add(-time.Minute).Unix(),
		"nbf":       testNow.Add(-time.Minute).Unix(),
		"client_id": "client-1",
		"jti":       "jti-1",
		"scope":     "tools:read tools:call",
	}
}

// with returns baseClaims changed by kv pairs; a nil value deletes.
func with(kv ...any) map[string]any {
	c := baseClaims()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

// mint signs claims with go-jose, typ at+jwt, kid from k.
func mint(t testing.TB, k *testKey, claims any) string {
	t.Helper()
	return mintTyp(t, k, claims, "at+jwt")
}

func mintTyp(t testing.TB, k *testKey, claims any, typ string) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", k.kid)
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.priv}, opts)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return tok
}

// forge hand-assembles a compact JWS from a raw JSON header and payload and
// signs it with k under alg (alg may differ from k.alg to build confused
// tokens). It lets tests build what go-jose refuses to produce: duplicate
// members, forbidden headers, non-numeric dates.
func forge(t testing.TB, k *testKey, header, payload string) string {
	t.Helper()
	var h struct {
		Alg string `json:"alg"`
	}
	_ = json.Unmarshal([]byte(header), &h)
	input := b64enc(header) + "." + b64enc(payload)
	return input + "." + base64.RawURLEncoding.EncodeToString(signRaw(t, k, h.Alg, []byte(input)))
}

// hdr returns a standard at+jwt header for k.
func hdr(k *testKey) string {
	return fmt.Sprintf(`{"alg":%q,"typ":"at+jwt","kid":%q}`, k.alg, k.kid)
}

// claimsJSON marshals c; map keys come out sorted.
func claimsJSON(c map[string]any) string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func b64enc(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// signRaw signs input per RFC 7518 for alg with k's private key. For HS256
// the key is k's public key in PEM form, the classic confusion attack.
func signRaw(t testing.TB, k *testKey, alg string, input []byte) []byte {
	t.Helper()
	if strings.EqualFold(alg, "none") {
		return nil
	}
	switch alg {
	case "HS256":
		m := hmac.New(sha256.New, publicPEM(k))
		m.Write(input)
		return m.Sum(nil)
	}
	if _, ok := jws.LookupAlg(alg); !ok {
		return []byte("not a signature")
	}
	// The hash and padding of alg (RFC 7518 §3.1), written out here rather
	// than taken from the code under test.
	spec := struct {
		hash crypto.Hash
		pss  bool
	}{crypto.SHA256, strings.HasPrefix(alg, "PS")}
	switch {
	case strings.HasSuffix(alg, "384"):
		spec.hash = crypto.SHA384
	case strings.HasSuffix(alg, "512"):
		spec.hash = crypto.SHA512
	}
	pssOptions := rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}
	appendHash := func(_ []byte, h crypto.Hash, in []byte) []byte {
		d := h.New()
		d.Write(in)
		return d.Sum(nil)
	}
	switch p := k.priv.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(p, input)
	case *rsa.PrivateKey:
		digest := appendHash(nil, spec.hash, input)
		var sig []byte
		var err error
		if spec.pss {
			sig, err = rsa.SignPSS(rand.Reader, p, spec.hash, digest, &pssOptions)
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, p, spec.hash, digest)
		}
		if err != nil {
			t.Fatalf("rsa sign: %v", err)
		}
		return sig
	case *ecdsa.PrivateKey:
		digest := appendHash(nil, spec.hash, input)
		r, s, err := ecdsa.Sign(rand.Reader, p, digest)
		if err != nil {
			t.Fatalf("ecdsa sign: %v", err)
		}
		size := (p.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out
	}
	t.Fatalf("signRaw: key type %T", k.priv)
	return nil
}

// derSignature re-encodes a raw r||s ECDSA signature as ASN.1 DER, with
// encoding/asn1 rather than the code under test.
func derSignature(t testing.TB, raw []byte) []byte {
	t.Helper()
	n := len(raw) / 2
	der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(raw[:n]), new(big.Int).SetBytes(raw[n:])})
	if err != nil {
		t.Fatalf("asn1: %v", err)
	}
	return der
}

// publicPEM is k's public key as PEM-encoded PKIX, the bytes an HMAC
// key-confusion attacker feeds to a verifier that trusts "alg".
func publicPEM(k *testKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// segments splits a compact token.
func segments(tok string) (h, p, s string) {
	parts := strings.SplitN(tok, ".", 3)
	return parts[0], parts[1], parts[2]
}

// withSig replaces the signature segment of tok by sig.
func withSig(tok string, sig []byte) string {
	h, p, _ := segments(tok)
	return h + "." + p + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// newTestValidator builds a Validator for testIss with the primary key set,
// the pinned clock and no cache, then applies mutate.
func newTestValidator(t testing.TB, mutate func(*Config)) *Validator {
	t.Helper()
	cfg := Config{
		Issuers:   []Issuer{{Issuer: testIss, Keys: keys(t).primarySet()}},
		Audiences: []string{testAud},
		Now:       func() time.Time { return testNow },
		CacheSize: -1,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// sentinels lists every error this package may return.
var sentinels = []error{
	errMalformed, errTooLarge, errUnsupportedAlgorithm, errType, errKeyNotFound,
	errSignature, errIssuer, errAudience, errClient, errExpired, errNotYetValid,
	errIssuedAt, errLifetime, errMissingClaim, ErrKeysUnavailable, Error{"inactive"}, ErrConfig, errSenderConstrained,
}

// wrapsOneSentinel reports whether err wraps exactly one sentinel.
func wrapsOneSentinel(err error) bool {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}
