package introspect_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// TestCacheFloodKeepsOthers: one principal presenting fresh active tokens
// and a flood of junk (inactive) tokens, 10x the cache's size in all, never
// evict another principal's cached result: its token, presented after
// every size flood tokens, keeps being answered from the cache, without a
// call to the endpoint. Before, the flood
// evicted it (one shared LRU).
func TestCacheFloodKeepsOthers(t *testing.T) {
	const size = 8
	iss, in := asIntro(t, func(c *introspect.Config) { c.CacheSize = size; c.InactiveCacheTTL = time.Minute })
	alice := iss.Token(t, authtest.Token{Opaque: true, Subject: "alice"})
	if _, err := in.Validate(t.Context(), alice); err != nil {
		t.Fatal(err)
	}
	for i := range 10 * size {
		if i%2 == 0 {
			iss.SetFault("", iss.IntrospectionURL)
			if _, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true, Subject: "mallory"})); err != nil {
				t.Fatal(err)
			}
		} else {
			iss.SetFault("inactive", iss.IntrospectionURL)
			if _, err := in.Validate(t.Context(), fmt.Sprint("junk-token-", i)); !errors.Is(err, validate.Error{Reason: "inactive"}) {
				t.Fatalf("junk: err = %v, want ErrInactive", err)
			}
		}
		if (i+1)%size != 0 {
			continue
		}
		iss.SetFault("", iss.IntrospectionURL)
		calls := iss.Requests(iss.IntrospectionURL)
		if _, err := in.Validate(t.Context(), alice); err != nil {
			t.Fatalf("alice after %d flood tokens: %v", i+1, err)
		}
		if got := iss.Requests(iss.IntrospectionURL); got != calls {
			t.Fatalf("after %d flood tokens, alice's result was evicted (the endpoint was asked again)", i+1)
		}
	}
}
