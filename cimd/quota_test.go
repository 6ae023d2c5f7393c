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

// quotaStore is a Store that is also a NetworkQuota, as
// redisstore.NewClientStore's is: a shared count every handler over the
// store uses. fail makes Take fail, as a store whose backend is down.
type quotaStore struct {
	*memoryStore
	q     *quota
	fail  bool
	takes int
}

func (s *quotaStore) Take(ctx context.Context, network string, max int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	s.takes++
	if s.fail {
		return false, 0, errors.New("backend down")
	}
	return s.q.Take(ctx, network, max, window, now)
}

func (s *quotaStore) Give(ctx context.Context, network string, now time.Time) error {
	return s.q.Give(ctx, network, now)
}

// TestDCRSharedNetworkQuota: two handlers over a Store that is a
// NetworkQuota count one network's registrations together (the quota is
// not multiplied by the number of handlers); an explicit
// DCRConfig.NetworkQuota is used instead; and a failing quota refuses
// registration with 503 (fail closed) without storing anything or naming
// the backend.
func TestDCRSharedNetworkQuota(t *testing.T) {
	store := &quotaStore{memoryStore: newMemoryStore(), q: newQuota(16)}
	mod := func(c *DCRConfig) { c.Store, c.NetworkClients = store, 2 }
	a, b := newDCR(t, mod), newDCR(t, mod)
	body := `{"redirect_uris":["https://app.example/cb"]}`
	for i, want := range []int{201, 201, 429, 429} {
		f := a
		if i%2 == 1 {
			f = b
		}
		if rec := f.post(body, "application/json", fmt.Sprintf("198.51.100.%d:1", i+1)); rec.Code != want {
			t.Fatalf("registration %d: %d %s, want %d", i, rec.Code, rec.Body, want)
		}
	}
	if rec := b.post(body, "application/json", "192.0.2.1:1"); rec.Code != 201 {
		t.Fatalf("another network: %d %s, want 201", rec.Code, rec.Body)
	}

	explicit := &quotaStore{memoryStore: newMemoryStore(), q: newQuota(16), fail: true}
	c := newDCR(t, func(c *DCRConfig) { c.Store, c.NetworkQuota = store, explicit })
	before := len(store.m)
	rec := c.post(body, "application/json", "203.0.113.1:1")
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("failing quota: %d (Retry-After %q) %s, want 503 with Retry-After 1", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got, want := rec.Body.String(), `{"error":"temporarily_unavailable","error_description":"registration is unavailable"}`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if explicit.takes != 1 || len(store.m) != before {
		t.Errorf("explicit quota takes = %d, stored %d new clients; want 1 and 0", explicit.takes, len(store.m)-before)
	}
}
