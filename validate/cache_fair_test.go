package validate

import (
	"fmt"
	"testing"
)

// TestCacheFloodKeepsOthers: one principal presenting fresh valid tokens
// for 10x the cache's size never evicts another principal's cached token
// (the cache is shared fairly between principals). Before, the flood
// evicted every other token, so their next request paid a full signature
// check again.
func TestCacheFloodKeepsOthers(t *testing.T) {
	const size = 8
	k := keys(t)
	v := cachedValidator(t, k.primarySet(), &clock{t: testNow}, size)
	alice := []string{mint(t, k.es256, with("sub", "alice", "jti", "a0")), mint(t, k.es256, with("sub", "alice", "jti", "a1"))}
	for _, tok := range alice {
		if _, err := v.Validate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 * size {
		if _, err := v.Validate(t.Context(), mint(t, k.ed, with("sub", "mallory", "jti", fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
		for j, tok := range alice {
			if !cached(v, tok) {
				t.Fatalf("after %d flood tokens, alice's token %d was evicted", i+1, j)
			}
		}
	}
	if n := v.cache.len(); n != size {
		t.Errorf("len = %d, want %d", n, size)
	}
}
