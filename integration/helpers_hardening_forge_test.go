package integration

// Hand-assembled tokens and the attacker's server of the hardening suites
// (see helpers_hardening_env_test.go).

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
)

// hxAttacker is a server an attacker controls. Tokens name it in jku/x5u;
// its requests counter must stay at zero.
type hxAttacker struct {
	ts       *httptest.Server
	requests atomic.Int64
	key      jose.JSONWebKey // private ES256, kid "attacker-1"
	certDER  []byte          // self-signed certificate for key
}

func newHxAttacker(t testing.TB) *hxAttacker {
	t.Helper()
	a := &hxAttacker{key: authtest.GenerateKey(jose.ES256, "attacker-1")}
	priv := a.key.Key.(*ecdsa.PrivateKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "attacker.example"},
		NotBefore:    time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		t.Fatal(err)
	}
	a.certDER = der
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{a.key.Public()}})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	a.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		switch r.URL.Path {
		case "/jwks":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(set)
		case "/cert.pem":
			w.Header().Set("Content-Type", "application/pem-certificate-chain")
			_, _ = w.Write(certPEM)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.ts.Close)
	return a
}

// publicJWK returns the attacker's public key as a JSON object.
func (a *hxAttacker) publicJWK() map[string]any {
	b, _ := json.Marshal(a.key.Public())
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "kid")
	return m
}

// hxSigner signs hand-assembled JWS compact tokens with a private key.
type hxSigner struct {
	key jose.JSONWebKey
}

// hxSignFormat selects the signature encoding.
type hxSignFormat int

const (
	hxSigJOSE hxSignFormat = iota // as JWS requires (ECDSA: R || S)
	hxSigDER                      // ECDSA only: ASN.1 DER, which JWS forbids
)

// sign returns header.payload.signature where header and payload are the
// exact bytes given (base64url-encoded here) and the signature is made
// with alg over the signing input.
func (s hxSigner) sign(t testing.TB, alg string, header, payload []byte) string {
	t.Helper()
	input := hxB64(header) + "." + hxB64(payload)
	return input + "." + hxB64(s.sigBytes(t, alg, []byte(input), hxSigJOSE))
}

// sigBytes signs input with alg.
func (s hxSigner) sigBytes(t testing.TB, alg string, input []byte, f hxSignFormat) []byte {
	t.Helper()
	digest := sha256.Sum256(input)
	var sig []byte
	var err error
	switch k := s.key.Key.(type) {
	case *ecdsa.PrivateKey:
		if f == hxSigDER {
			sig, err = ecdsa.SignASN1(rand.Reader, k, digest[:])
			break
		}
		var r, ss *big.Int
		if r, ss, err = ecdsa.Sign(rand.Reader, k, digest[:]); err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			ss.FillBytes(sig[32:])
		}
	case *rsa.PrivateKey:
		if strings.HasPrefix(alg, "PS") {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, input)
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write(input)
		sig = m.Sum(nil)
	default:
		t.Fatalf("hxSigner: unsupported key %T", s.key.Key)
	}
	if err != nil {
		t.Fatalf("hxSigner: %v", err)
	}
	return sig
}

// hxJSON marshals v, failing the test on error.
func hxJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hxB64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// hxSegments splits a compact JWS into its three segments.
func hxSegments(t testing.TB, tok string) (h, p, s string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments", len(parts))
	}
	return parts[0], parts[1], parts[2]
}

func hxRandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
