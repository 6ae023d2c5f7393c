package cimd

import (
	"context"
	"fmt"
	"testing"
)

// TestDocCacheFloodKeepsOtherHosts: one host serving endless client_id
// URLs, resolved at full speed for 10x the cache's size, never evicts
// another host's cached document: resolving it again needs no fetch (so
// no share of the global fetch limit). Before, the shared LRU evicted it.
func TestDocCacheFloodKeepsOtherHosts(t *testing.T) {
	const size = 4
	good := newTLSServer(t, response{body: validDoc})
	evil := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(good, newClock())
	cfg.RootCAs.AddCert(evil.Certificate())
	cfg.CacheSize = size
	r := mustResolver(t, cfg)
	ctx := context.Background()
	_, err := r.Resolve(ctx, good.URL+"/client")
	wantErrs(t, err)
	for i := range 10 * size {
		_, err := r.Resolve(ctx, fmt.Sprint(evil.URL, "/c", i))
		wantErrs(t, err)
		if (i+1)%size != 0 {
			continue
		}
		before := good.hits.Load()
		_, err = r.Resolve(ctx, good.URL+"/client")
		wantErrs(t, err)
		if good.hits.Load() != before {
			t.Fatalf("after %d flood documents, the other host's document was evicted (fetched again)", i+1)
		}
	}
	if n := r.cache.len(); n != size {
		t.Errorf("cache holds %d, want %d", n, size)
	}
}
