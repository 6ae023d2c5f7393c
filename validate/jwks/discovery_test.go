package jwks

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/validate"
)

func discoveryConfig(t *testing.T, f *fakeJWKS, clk *fakeClock) Config {
	t.Helper()
	cfg := testConfig(t, f, clk)
	cfg.JWKSURL = ""
	return cfg
}

func TestDiscovery(t *testing.T) {
	clk := newClock()
	k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
	f := newFake(t, k1)
	f.setMetaIssuer(f.srv.URL)
	s := newSource(t, discoveryConfig(t, f, clk))

	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Fatalf("Keys(k1) = %v", err)
	}
	f.setKeys(t, k1, k2)
	if _, err := s.Keys(t.Context(), "k2"); err != nil {
		t.Fatalf("Keys(k2) = %v", err)
	}
	if md, jw := f.mdHits.Load(), f.hits.Load(); md != 1 || jw != 2 {
		t.Errorf("metadata fetches = %d, jwks fetches = %d; want 1 (cached) and 2", md, jw)
	}

	// The jwks_uri vanishes (404): the next refresh discovers again.
	f.setMode(modeNotFound)
	clk.Advance(time.Hour)
	if err := s.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh against 404 = nil")
	}
	f.setKeys(t, k1, k2)
	clk.Advance(time.Hour)
	if err := s.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh after 404 = %v", err)
	}
	if md := f.mdHits.Load(); md != 2 {
		t.Errorf("metadata fetches after a 404 = %d, want 2", md)
	}
}

func TestDiscoveryMixUpRejected(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	f.setMetaIssuer("https://honest.example") // served at f's own well-known URL
	s := newSource(t, discoveryConfig(t, f, newClock()))

	_, err := s.Keys(t.Context(), "k1")
	if !errors.Is(err, validate.ErrKeysUnavailable) || !errors.Is(err, errDiscovery) || !errors.Is(err, asmeta.ErrIssuerMismatch) {
		t.Fatalf("Keys = %v, want %v wrapping %v and %v", err, validate.ErrKeysUnavailable, errDiscovery, asmeta.ErrIssuerMismatch)
	}
	if got := f.hits.Load(); got != 0 {
		t.Errorf("the JWKS named by a mixed-up document was fetched %d times", got)
	}
	if st := s.stats(); !errors.Is(st.LastError, asmeta.ErrIssuerMismatch) || st.Keys != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDiscoveryRecoversByItself(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	s := newSource(t, discoveryConfig(t, f, newClock())) // no metadata yet

	if _, err := s.Keys(t.Context(), "k1"); !errors.Is(err, validate.ErrKeysUnavailable) || !errors.Is(err, asmeta.ErrNotFound) {
		t.Fatalf("Keys = %v, want %v wrapping %v", err, validate.ErrKeysUnavailable, asmeta.ErrNotFound)
	}
	f.setMetaIssuer(f.srv.URL)
	eventually(t, 30*time.Second, func() bool { return s.stats().Keys == 1 })
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Errorf("Keys after metadata appeared = %v", err)
	}
}
