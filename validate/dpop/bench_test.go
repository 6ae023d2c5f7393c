package dpop

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
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
