package cimd

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestDCRFloodFromOneNetwork: one network registering at full speed from
// a new address each time, for 10x the tracked-address bound, with the
// default limits and a pinned clock, never causes a 429 for a client of
// another network. Before, each new address brought a full bucket, the
// flood emptied the global bucket, and every registration was refused.
func TestDCRFloodFromOneNetwork(t *testing.T) {
	const bound = 16
	f := newDCR(t, func(c *DCRConfig) {
		c.IPRate, c.IPBurst = defaultIPRate, defaultIPBurst
		c.GlobalRate, c.GlobalBurst = defaultDCRGlobalRate, defaultDCRGlobalBurst
		c.MaxTrackedIPs = bound
	})
	body := `{"redirect_uris":["https://app.example/cb"]}`
	victim := 0
	for i := range 10 * bound {
		if rec := f.post(body, "application/json", fmt.Sprintf("198.51.100.%d:1", i%250)); rec.Code != 201 && rec.Code != 429 {
			t.Fatalf("flood request %d: %d", i, rec.Code)
		}
		if i%(10*bound/8) == 0 { // 8 registrations, within one address's burst
			victim++
			if rec := f.post(body, "application/json", "192.0.2.7:1"); rec.Code != 201 {
				t.Fatalf("victim's registration %d after %d flood requests: %d %s, want 201", victim, i+1, rec.Code, rec.Body)
			}
		}
	}
}

// TestResolveFloodFromOneSite: one site serving client_id URLs on a new
// host each time, for 10x the tracked-host bound, with the default limits
// and a pinned clock, never causes errRateLimited for a client on another
// site. Before, each new host brought a full bucket and the flood emptied
// the global bucket for everyone.
func TestResolveFloodFromOneSite(t *testing.T) {
	const bound = 16
	s := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(s, newClock())
	cfg.HostFetchRate, cfg.HostFetchBurst = defaultHostFetchRate, defaultHostFetchBurst
	cfg.GlobalFetchRate, cfg.GlobalFetchBurst = defaultGlobalFetchRate, defaultGlobalFetchBurst
	cfg.MaxHosts = bound
	r := mustResolver(t, cfg)
	ctx := context.Background()
	victim := 0
	for i := range 10 * bound {
		// Nothing listens on 127.0.5.N: admitted fetches fail fast.
		if _, err := r.Resolve(ctx, fmt.Sprintf("https://127.0.5.%d:%d/c.json", i%250+2, s.port())); !errors.Is(err, errRateLimited) && !errors.Is(err, errFetch) {
			t.Fatalf("flood request %d: %v", i, err)
		}
		if i%(10*bound/8) == 0 { // 8 documents, within one host's burst
			victim++
			if _, err := r.Resolve(ctx, fmt.Sprintf("%s/victim/%d.json", s.URL, victim)); err != nil {
				t.Fatalf("victim's document %d after %d flood requests: %v", victim, i+1, err)
			}
		}
	}
}
