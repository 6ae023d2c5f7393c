package introspect_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
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

// BenchmarkHybridJWTCached is a cached JWT through a Hybrid: the cost of
// Trusts (routing) on top of the JWT validator's cache hit.
func BenchmarkHybridJWTCached(b *testing.B) {
	iss := authtest.NewIssuer(b, authtest.IssuerConfig{})
	id, secret := iss.IntrospectionClientID, iss.IntrospectionSecret
	in := newIntro(b, introspect.Config{Issuer: iss.URL, Endpoint: iss.IntrospectionURL, Audiences: []string{iss.Audience}, ClientID: id, ClientSecret: secret, Now: iss.Now})
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{iss.Audience},
		Now:       iss.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	h, err := introspect.NewHybrid(v, in)
	if err != nil {
		b.Fatal(err)
	}
	tok := iss.Token(b, authtest.Token{})
	if _, err := h.Validate(b.Context(), tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Validate(b.Context(), tok); err != nil {
			b.Fatal(err)
		}
	}
	if n := iss.Requests(iss.IntrospectionURL); n != 0 {
		b.Fatalf("introspection calls = %d, want 0", n)
	}
}
