package middleware

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// BenchmarkMiddlewareAlgs puts, for ES256, RS256 and EdDSA, a small token
// and a 4 KiB one (150 "groups"), serially and with RunParallel: the floor
// (hash and one signature verification with the standard library),
// validate.Validator alone with its cache off and on, and a GET through
// Handler with an httptest recorder, with the validator's cache off and
// on. Besides sec/op each reports cpu-ns/op, the process CPU time per
// operation, which stays meaningful on a shared machine. Compare with
//
//	benchstat -col /op -row /alg,/size,/mode file
func BenchmarkMiddlewareAlgs(b *testing.B) {
	env := newBenchEnv(b)
	handler := func(v *validate.Validator) http.Handler {
		m, err := New(testConfig(v, env.iss))
		if err != nil {
			b.Fatal(err)
		}
		return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	}
	v, vc := env.validator(b, -1), env.validator(b, 0)
	h, hc := handler(v), handler(vc)
	kids := map[jose.SignatureAlgorithm]string{jose.ES256: "es256-1", jose.RS256: "rs256-1", jose.EdDSA: "eddsa-1"}
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA} {
		for _, size := range []string{"small", "4k"} {
			spec := authtest.Token{Alg: alg, Scopes: []string{"mcp", "tools:read", "tools:call", "weather:read"}}
			if size == "4k" {
				spec.Claims = map[string]any{"groups": benchGroups()}
			}
			tok := env.iss.Token(b, spec)
			floor := floorFunc(b, env, tok, kids[alg])
			req := httptest.NewRequest(http.MethodGet, resource, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			validateWith := func(v *validate.Validator) func() {
				return func() {
					if _, err := v.Validate(b.Context(), tok); err != nil {
						b.Fatal(err)
					}
				}
			}
			serve := func(h http.Handler) func() {
				return func() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusNoContent {
						b.Fatalf("status %d", rec.Code)
					}
				}
			}
			// serveDiscard reuses one ResponseWriter: the middleware's own
			// cost, without httptest.NewRecorder's allocations.
			dw := &discardWriter{h: http.Header{}}
			serveDiscard := func(h http.Handler) func() {
				return func() { h.ServeHTTP(dw, req) }
			}
			ops := []struct {
				name string
				fn   func()
			}{
				{"floor", floor},
				{"validate", validateWith(v)},
				{"validate_cached", validateWith(vc)},
				{"middleware", serve(h)},
				{"middleware_cached", serve(hc)},
				{"middleware_cached_discard", serveDiscard(hc)},
			}
			for _, op := range ops {
				op.fn() // warm: fills the cache of the cached ops
				b.Run("alg="+string(alg)+"/size="+size+"/mode=serial/op="+op.name, func(b *testing.B) {
					b.ReportAllocs()
					start := dpopCPUTime() // process CPU time (dpop_cputime_*_test.go)
					for b.Loop() {
						op.fn()
					}
					reportCPU(b, start)
				})
				b.Run("alg="+string(alg)+"/size="+size+"/mode=parallel/op="+op.name, func(b *testing.B) {
					b.ReportAllocs()
					start := dpopCPUTime() // process CPU time (dpop_cputime_*_test.go)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							op.fn()
						}
					})
					reportCPU(b, start)
				})
			}
		}
	}
}

// benchGroups returns the 150 "groups" of the 4 KiB benchmark token, as a
// directory-backed issuer sends.
func benchGroups() []string {
	g := make([]string, 150)
	for i := range g {
		g[i] = fmt.Sprintf("team-%03d-member", i)
	}
	return g
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
