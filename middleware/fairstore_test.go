package middleware

import (
	"crypto/ecdsa"

	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

// TestDPoPReplayStoreFlood: one DPoP-bound principal sending fresh
// proofs at full speed for 10x the replay store's bound (with several
// keys, so that partitioning by key alone would not help) never causes a
// refusal of another principal's valid request. Before the store was
// shared fairly, the flood filled it and every DPoP request got 503.
func TestDPoPReplayStoreFlood(t *testing.T) {
	const bound = 32
	f := newDPoPFixture(t, DPoPRequired, func(c *Config) {
		c.DPoP.Proof.ReplayStore = dpop.NewMemoryReplayStore(bound, nil)
	})
	keys := []*ecdsa.PrivateKey{f.key, newECKey(t), newECKey(t), newECKey(t)}
	var floodToks []string
	for _, k := range keys {
		floodToks = append(floodToks, f.iss.Token(t, authtest.Token{Scopes: allScopes, Subject: "mallory", Claims: map[string]any{"cnf": map[string]any{"jkt": thumbprint(t, k)}}}))
	}
	victim := f.iss.Token(t, authtest.Token{Scopes: allScopes, Subject: "alice", Claims: map[string]any{"cnf": map[string]any{"jkt": thumbprint(t, f.other)}}})
	victimOK := 0
	for i := range 10 * bound {
		k := i % len(keys)
		tok := floodToks[k]
		f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{key: keys[k]}, tok)}})
		if i%(2*len(keys)) == 0 { // bound/2 victim requests in all: never the largest partition
			got := f.do(t, dpopCall{authz: "DPoP " + victim, proofs: []string{f.sign(t, proof{key: f.other}, victim)}})
			if got.status != 200 {
				t.Fatalf("victim request after %d flood requests: %d %q, want 200", i+1, got.status, got.wwwAuth)
			}
			victimOK++
		}
	}
	if victimOK != 10*bound/(2*len(keys)) {
		t.Fatalf("victim requests: %d", victimOK)
	}
}
