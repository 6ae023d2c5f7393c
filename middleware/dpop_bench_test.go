package middleware

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

func reportCPU(b *testing.B, start time.Duration) {
	if end := dpopCPUTime(); end > 0 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// alwaysFresh is a ReplayStore that accepts every key, so that one proof
// can be replayed by the benchmark; the cost of the in-memory store is
// measured separately by BenchmarkDPoP/op=replay_claim.
type alwaysFresh struct{}

func (alwaysFresh) Claim(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

// BenchmarkDPoP compares a GET with a DPoP-bound token and its proof to the
// same GET with a bearer token, with the validator's verified-token cache
// off (cold: the token signature is checked on every request) and on
// (cached). The extra cost of DPoP divided by BenchmarkFloor (one ES256
// verification) is the figure docs/dpop.md reports.
func BenchmarkDPoP(b *testing.B) {
	iss := authtest.NewIssuer(b, authtest.IssuerConfig{Audience: resource})
	f := &dpopFixture{iss: iss, key: newECKey(b)}
	f.jkt = thumbprint(b, f.key)
	bearer := iss.Token(b, authtest.Token{Scopes: []string{"mcp"}})
	bound := iss.Token(b, authtest.Token{Scopes: []string{"mcp"}, Claims: map[string]any{"cnf": map[string]any{"jkt": f.jkt}}})
	p := f.sign(b, proof{claims: map[string]any{"htm": http.MethodGet}}, bound)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, c := range []struct {
		name string
		size int
	}{{"off", -1}, {"on", 0}} {
		v, err := validate.New(validate.Config{
			Issuers:           []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
			Audiences:         []string{resource},
			Now:               iss.Now,
			CacheSize:         c.size,
			AllowConfirmation: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		cfg := testConfig(v, iss)
		cfg.DPoP = DPoPConfig{Policy: DPoPAllowed, Proof: dpop.Config{Now: iss.Now, ReplayStore: alwaysFresh{}}}
		m, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		h := m.Handler(ok)
		for _, s := range []struct {
			scheme string
			hdr    map[string]string
		}{
			{"bearer", map[string]string{"Authorization": "Bearer " + bearer}},
			{"dpop", map[string]string{"Authorization": "DPoP " + bound, "DPoP": p}},
		} {
			r := httptest.NewRequest(http.MethodGet, resource, nil)
			for k, val := range s.hdr {
				r.Header.Set(k, val)
			}
			dw := &discardWriter{h: http.Header{}}
			b.Run(fmt.Sprintf("cache=%s/scheme=%s", c.name, s.scheme), func(b *testing.B) {
				b.ReportAllocs()
				start := dpopCPUTime()
				for b.Loop() {
					h.ServeHTTP(dw, r)
				}
				reportCPU(b, start)
			})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusNoContent {
				b.Fatalf("%s: status %d %q", s.scheme, rec.Code, rec.Header().Values("WWW-Authenticate"))
			}
		}
	}
	b.Run("op=floor", func(b *testing.B) { // one ES256 verification, as BenchmarkFloor
		dot := strings.LastIndexByte(bound, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(bound[dot+1:])
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		var pub *ecdsa.PublicKey
		for _, k := range iss.Keys() {
			if k.KeyID == "es256-1" {
				pub, _ = k.Key.(*ecdsa.PublicKey)
			}
		}
		input := []byte(bound[:dot])
		b.ReportAllocs()
		start := dpopCPUTime()
		for b.Loop() {
			sum := sha256.Sum256(input)
			if !ecdsa.Verify(pub, sum[:], r, s) {
				b.Fatal("verify")
			}
		}
		reportCPU(b, start)
	})
	b.Run("op=replay_claim", func(b *testing.B) {
		store := dpop.NewMemoryReplayStore(1<<20, nil)
		keys := make([]string, 1<<16)
		for i := range keys {
			keys[i] = fmt.Sprintf("dpop:%043d", i)
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			_, _ = store.Claim(context.Background(), "p", keys[i%len(keys)], time.Millisecond)
			i++
		}
	})
}
