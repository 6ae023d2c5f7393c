package middleware

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
)

// BenchmarkMiddlewareAlgs puts, for ES256, RS256 and EdDSA, serially and
// with RunParallel: the floor (hash and one signature verification with the
// standard library), validate.Validator alone with its cache off, and a GET
// through Handler with an httptest recorder (cache off). Compare with
//
//	benchstat -col /op -row /alg,/mode file
func BenchmarkMiddlewareAlgs(b *testing.B) {
	env := newBenchEnv(b)
	v := env.validator(b, -1)
	m, err := New(testConfig(v, env.iss))
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	kids := map[jose.SignatureAlgorithm]string{jose.ES256: env.iss.SigningKID(), jose.RS256: authtest.KIDRS256, jose.EdDSA: authtest.KIDEdDSA}
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA} {
		tok := env.iss.Token(b, authtest.WithAlgorithm(alg), authtest.WithScopes("mcp", "tools:read", "tools:call", "weather:read"))
		floor := floorFunc(b, env, tok, kids[alg])
		req := httptest.NewRequest(http.MethodGet, resource, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		ops := []struct {
			name string
			fn   func()
		}{
			{"floor", floor},
			{"validate", func() {
				if _, err := v.Validate(b.Context(), tok); err != nil {
					b.Fatal(err)
				}
			}},
			{"middleware", func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusNoContent {
					b.Fatalf("status %d", rec.Code)
				}
			}},
		}
		for _, op := range ops {
			b.Run("alg="+string(alg)+"/mode=serial/op="+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					op.fn()
				}
			})
			b.Run("alg="+string(alg)+"/mode=parallel/op="+op.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						op.fn()
					}
				})
			})
		}
	}
}

// floorFunc returns the raw standard-library check of tok's signature under
// the issuer's public key kid.
func floorFunc(b *testing.B, env *benchEnv, tok, kid string) func() {
	b.Helper()
	var pub crypto.PublicKey
	for _, k := range env.iss.Keys() {
		if k.KeyID == kid {
			pub = k.Key
		}
	}
	dot := strings.LastIndexByte(tok, '.')
	input := []byte(tok[:dot])
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	fail := func() { b.Fatal("floor: signature did not verify") }
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return func() {
			sum := sha256.Sum256(input)
			if !ecdsa.Verify(p, sum[:], r, s) {
				fail()
			}
		}
	case *rsa.PublicKey:
		return func() {
			sum := sha256.Sum256(input)
			if rsa.VerifyPKCS1v15(p, crypto.SHA256, sum[:], sig) != nil {
				fail()
			}
		}
	case ed25519.PublicKey:
		return func() {
			if !ed25519.Verify(p, input, sig) {
				fail()
			}
		}
	}
	b.Fatalf("no public key %q", kid)
	return nil
}
