package middleware

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

// TestUserFloodReplay: the DPoP replay store's partition is the user,
// whatever the client: one user sending fresh proofs through 1,000
// client IDs (one per second of the pinned clock), for 10x the store's
// capacity, holds one partition and evicts only its own proofs (each
// fresh proof is accepted), and another user's valid proofs are never
// refused. Before, each (user, client) was a partition:
// the flood filled the store with one-entry partitions, which the store
// keeps (a partition's last entry holds its replay floor), so a new
// partition's proof, bob's, could not be recorded and was refused.
func TestUserFloodReplay(t *testing.T) {
	const clients, capacity = 1000, 100
	f := newDPoPFixture(t, DPoPRequired, func(c *Config) {
		c.DPoP.Proof.ReplayStore = dpop.NewMemoryReplayStore(capacity, c.Now)
	})
	token := func(sub, client string) string {
		return f.iss.Token(t, authtest.Token{Subject: sub, ClientID: client, Scopes: allScopes, Claims: map[string]any{"cnf": map[string]any{"jkt": f.jkt}}})
	}
	call := func(tok string) int {
		return f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}).status
	}
	bob := token("bob", "https://bob.example/app")
	refused := 0
	for i := range clients {
		// A second per proof: proofs expire in the order sent, as at
		// full speed with a real clock over seconds.
		f.iss.Advance(time.Second)
		if call(token("mallory", fmt.Sprintf("https://mallory.example/app-%d", i))) != http.StatusOK {
			refused++
		}
		if i%100 == 99 {
			if got := call(bob); got != http.StatusOK {
				t.Fatalf("bob's proof after %d of mallory's: %d, want 200", i+1, got)
			}
		}
	}
	if refused != 0 {
		t.Errorf("%d of mallory's fresh proofs refused, want none (her partition evicts her own)", refused)
	}
}
