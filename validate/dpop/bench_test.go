package dpop

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"github.com/go-jose/go-jose/v4"
	"github.com/mcpguard/mcpguard/internal/jws"
	"math/big"
	"strings"
	"testing"
	"time"
)

// BenchmarkVerify is one proof check (store excluded: it accepts every
// key); BenchmarkVerify/floor is the ES256 verification inside it, SHA-256
// and ecdsa.Verify of the signing input, for the ratio.
func BenchmarkVerify(b *testing.B) {
	testKeys(b)
	v := newTestVerifier(b, Config{ReplayStore: storeFunc(func(string, time.Duration) (bool, error) { return true, nil })})
	proof := goodSpec(b).sign(b)
	req := goodRequest(b, proof)
	b.Run("op=verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(bg, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	dot := strings.LastIndexByte(proof, '.')
	sig, _ := base64.RawURLEncoding.DecodeString(proof[dot+1:])
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	input := []byte(proof[:dot])
	b.Run("op=floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sum := sha256.Sum256(input)
			if !ecdsa.Verify(&ecKey.PublicKey, sum[:], r, s) {
				b.Fatal("verify")
			}
		}
	})
}

// BenchmarkSignature compares, in one run, the two JWS verifiers this
// package could use for the signature stage of a proof (§4.3 checks 5
// to 7, after the header has been read): impl=gojose parses the compact
// proof again with go-jose (header and "jwk" included) and verifies with
// it; impl=stdlib parses the header's "jwk" with go-jose and verifies with
// internal/jws, the verifier of access tokens (docs/jose.md). Compare
// with: benchstat -col /impl.
func BenchmarkSignature(b *testing.B) {
	testKeys(b)
	proof := goodSpec(b).sign(b)
	hs, _, _ := strings.Cut(proof, ".")
	hb, _ := base64.RawURLEncoding.DecodeString(hs)
	var h struct {
		JWK json.RawMessage `json:"jwk"`
	}
	if err := json.Unmarshal(hb, &h); err != nil {
		b.Fatal(err)
	}
	b.Run("impl=gojose", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sig, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sig.Verify(sig.Signatures[0].Protected.JSONWebKey.Key); err != nil {
				b.Fatal(err)
			}
		}
	})
	alg, _ := jws.LookupAlg("ES256")
	b.Run("impl=stdlib", func(b *testing.B) {
		b.ReportAllocs()
		var scratch [jws.ScratchSize]byte
		for b.Loop() {
			d1, d2, ok := jws.Split(proof)
			if !ok {
				b.Fatal("split")
			}
			var k jose.JSONWebKey
			if err := k.UnmarshalJSON(h.JWK); err != nil {
				b.Fatal(err)
			}
			pub, ok := jws.UsableKey(&k, &alg, "")
			if !ok {
				b.Fatal("key")
			}
			src := proof[d2+1:]
			sig, ok := jws.Decode(make([]byte, jws.Encoding.DecodedLen(len(src))), []byte(src))
			if !ok || !jws.Verify(&alg, pub, []byte(proof[:d2]), sig, scratch[:]) {
				b.Fatal("verify")
			}
			_ = d1
		}
	})
}
