package dpop

import (
	"errors"
	"testing"
	"time"
)

// FuzzVerify: no input panics, every error is one of the sentinels, and
// an accepted proof really carries the checked values.
func FuzzVerify(f *testing.F) {
	testKeys(f)
	good := goodSpec(f)
	f.Add(good.sign(f), "POST")
	for _, mut := range []func(s *proofSpec){
		func(s *proofSpec) { s.header["alg"] = "none"; s.key = nil },
		func(s *proofSpec) { s.claims["htu"] = testURI + "?q" },
		func(s *proofSpec) { s.rawHdr = `{"typ":"dpop+jwt","typ":"x"}` },
		func(s *proofSpec) { s.header["jwk"] = map[string]any{"kty": "oct", "k": "AA"} },
	} {
		s := goodSpec(f).clone()
		mut(&s)
		f.Add(s.sign(f), "POST")
	}
	f.Add("", "GET")
	f.Add("a.b.c", "POST")
	f.Add("eyJ0eXAiOiJkcG9wK2p3dCJ9..", "POST")
	f.Fuzz(func(t *testing.T, proof, method string) {
		v := newTestVerifier(t, Config{ReplayStore: storeFunc(func(string, time.Duration) (bool, error) { return true, nil })})
		r := goodRequest(t, proof)
		r.Method = method
		p, err := v.Verify(bg, r)
		if err != nil {
			if p != nil {
				t.Fatal("proof with error")
			}
			for _, s := range []error{ErrInvalidProof, errKeyBinding, errUseNonce, errReplayStore} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("unclassified error %v", err)
		}
		if p.JKT != r.JKT {
			t.Fatalf("accepted a proof of key %q for a token bound to %q", p.JKT, r.JKT)
		}
	})
}

// FuzzNormalizeURI: normalisation is idempotent and never accepts a query
// or fragment.
func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{testURI, "HTTPS://A:443/%7e/./../b", "http://[::1]:80", "https://a/b?c#d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := normalizeURI(s)
		if !ok {
			return
		}
		m, ok := normalizeURI(n)
		if !ok || m != n {
			t.Fatalf("normalizeURI(%q) = %q, then %q, %v", s, n, m, ok)
		}
	})
}
