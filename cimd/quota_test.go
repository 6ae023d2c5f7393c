package cimd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestDCRStoreFloodFromOneNetwork: one network registering slowly (one a
// second, within every rate limit) from a new address each time, 10x
// NetworkClients times, stores NetworkClients clients and is then refused
// with 429 until its oldest registration leaves the window, while every
// registration of another network is stored. Before, nothing bounded the
// records of one network: the flood stored all of them.
func TestDCRStoreFloodFromOneNetwork(t *testing.T) {
	const bound = 16
	f := newDCR(t, func(c *DCRConfig) {
		c.IPRate, c.IPBurst = defaultIPRate, defaultIPBurst
		c.GlobalRate, c.GlobalBurst = defaultDCRGlobalRate, defaultDCRGlobalBurst
		c.NetworkClients = bound
	})
	body := `{"redirect_uris":["https://app.example/cb"]}`
	start := f.clk.Now()
	stored, victim := 0, 0
	for i := range 10 * bound {
		rec := f.post(body, "application/json", fmt.Sprintf("198.51.100.%d:1", i%250))
		switch {
		case i < bound && rec.Code == 201:
			stored++
		case i >= bound && rec.Code == 429:
			wait := start.Add(defaultNetworkClientWindow).Sub(f.clk.Now())
			if got, want := rec.Header().Get("Retry-After"), strconv.Itoa(int(wait/time.Second)); got != want {
				t.Fatalf("flood request %d: Retry-After %q, want %q", i, got, want)
			}
			if got, want := rec.Body.String(), `{"error":"temporarily_unavailable","error_description":"too many registrations from this network"}`; got != want {
				t.Fatalf("flood request %d: body %s, want %s", i, got, want)
			}
		default:
			t.Fatalf("flood request %d: %d %s; the network holds %d registrations, the bound is %d", i, rec.Code, rec.Body, stored, bound)
		}
		if i%(10*bound/8) == 0 { // 8 registrations, within one address's burst
			victim++
			if rec := f.post(body, "application/json", "192.0.2.7:1"); rec.Code != 201 {
				t.Fatalf("victim's registration %d after %d flood requests: %d %s, want 201", victim, i+1, rec.Code, rec.Body)
			}
		}
		f.clk.Advance(time.Second)
	}
	if n := len(f.store.m); n != bound+victim {
		t.Fatalf("store holds %d clients, want %d (the flood's %d and the victim's %d)", n, bound+victim, bound, victim)
	}
	// Once the first registration leaves the window, one more is stored.
	f.clk.Advance(start.Add(defaultNetworkClientWindow).Sub(f.clk.Now()))
	if rec := f.post(body, "application/json", "198.51.100.1:1"); rec.Code != 201 {
		t.Fatalf("after the window: %d %s, want 201", rec.Code, rec.Body)
	}
	if rec := f.post(body, "application/json", "198.51.100.2:1"); rec.Code != 429 {
		t.Fatalf("after the window, second: %d %s, want 429", rec.Code, rec.Body)
	}
}

// failOnceStore fails its first Put.
type failOnceStore struct {
	*memoryStore
	failed bool
}

func (s *failOnceStore) Put(ctx context.Context, c *Client) error {
	if !s.failed {
		s.failed = true
		return errors.New("disk full")
	}
	return s.memoryStore.Put(ctx, c)
}

// TestDCRQuotaCountsOnlyStored: a registration the store refuses, or one
// refused as invalid, does not count against the network's quota.
func TestDCRQuotaCountsOnlyStored(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) {
		c.NetworkClients = 1
		c.Store = &failOnceStore{memoryStore: newMemoryStore()}
	})
	body := `{"redirect_uris":["https://app.example/cb"]}`
	for i, want := range []int{500, 400, 201, 429} {
		b := body
		if want == 400 {
			b = `{"redirect_uris":["http://app.example/cb"]}`
		}
		if rec := f.post(b, "application/json", "203.0.113.9:1"); rec.Code != want {
			t.Fatalf("request %d: %d %s, want %d", i, rec.Code, rec.Body, want)
		}
	}
}
