package introspect_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/validate/introspect"
)

// BenchmarkIntrospectCached is the cost of a cache hit: SHA-256 of the
// token, an LRU lookup, the time checks and a copy of the claims. Compare
// with validate's BenchmarkValidateCached (a cached JWT) and BenchmarkFloor
// (one ES256 verification):
//
//	go test -run='^$' -bench=. -count=6 ./validate/introspect/ ./validate/
func BenchmarkIntrospectCached(b *testing.B) {
	s := newStub(b, jsonAnswer(activeJSON()))
	in := newIntro(b, introspect.Config{Endpoint: s.URL(), TenantClaim: "tenant"})
	tok := "opaque-3q2-7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" // 50 bytes, a typical opaque token
	if _, err := in.Validate(b.Context(), tok); err != nil {
		b.Fatal(err)
	}
	b.Run("mode=serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := in.Validate(b.Context(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mode=parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := in.Validate(b.Context(), tok); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	if n := s.calls.Load(); n != 1 {
		b.Fatalf("endpoint calls = %d, want 1", n)
	}
}

// BenchmarkIntrospectUncached is one full round trip to a loopback
// endpoint (cache disabled): request, response parsing and checks.
func BenchmarkIntrospectUncached(b *testing.B) {
	s := newStub(b, jsonAnswer(activeJSON()))
	in := newIntro(b, introspect.Config{Endpoint: s.URL(), CacheSize: -1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.Validate(b.Context(), testToken); err != nil {
			b.Fatal(err)
		}
	}
}
