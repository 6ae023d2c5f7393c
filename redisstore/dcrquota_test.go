package redisstore_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/redisstore"
)

// dcrReplica is one authorization-server replica's registration endpoint
// over the shared Redis client store, on a pinned clock, with the rate
// limits out of the way (the quota is under test) and the client IP taken
// from a test header.
func dcrReplica(t *testing.T, store cimd.Store, quota int, now func() time.Time) *cimd.DCRHandler {
	t.Helper()
	h, err := cimd.NewDCRHandler(cimd.DCRConfig{
		Store:               store,
		NetworkClients:      quota,
		NetworkClientWindow: time.Hour,
		IPRate:              rate.Inf,
		GlobalRate:          rate.Inf,
		Now:                 now,
		ClientIP:            func(r *http.Request) string { return r.Header.Get("X-Test-IP") },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// register posts one registration from ip and returns the response.
func register(t *testing.T, h http.Handler, ip string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(
		`{"redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"none","client_name":"q"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-IP", ip)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestDCRNetworkQuotaAcrossReplicas: DCRConfig.NetworkClients bounds what
// one network registers across every replica sharing the Redis client
// store, not per process: two handlers on one redis-server together accept
// exactly the quota of one network, then 429 with Retry-After until the
// oldest registration leaves the window; another network is never refused
// for it; every quota key has a TTL; and with Redis down registration
// fails closed with 503.
func TestDCRNetworkQuotaAcrossReplicas(t *testing.T) {
	srv, rdb := newRedis(t)
	store, err := redisstore.NewClientStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	const quota = 4
	clock := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	replicas := []*cimd.DCRHandler{dcrReplica(t, store, quota, now), dcrReplica(t, store, quota, now)}

	// One network (10.1.2.0/24) from many addresses, alternating replicas.
	accepted := 0
	for i := range 3 * quota {
		w := register(t, replicas[i%2], "10.1.2."+strconv.Itoa(1+i))
		switch w.Code {
		case http.StatusCreated:
			accepted++
		case http.StatusTooManyRequests:
			if w.Header().Get("Retry-After") != "3600" {
				t.Errorf("429 Retry-After = %q, want 3600", w.Header().Get("Retry-After"))
			}
		default:
			t.Fatalf("registration %d: status %d: %s", i, w.Code, w.Body)
		}
	}
	if accepted != quota {
		t.Fatalf("two replicas accepted %d registrations of one network, want the quota %d in all", accepted, quota)
	}

	// Another network is never refused for it, on either replica.
	for i := range quota {
		if w := register(t, replicas[i%2], "10.9.9."+strconv.Itoa(1+i)); w.Code != http.StatusCreated {
			t.Fatalf("other network's registration %d: status %d, want 201", i, w.Code)
		}
	}
	for _, k := range keysWithTTL(t, rdb) {
		if len(k) > 128 {
			t.Errorf("key of %d bytes: %q", len(k), k)
		}
	}

	// Give takes one back (a registration the store then refused).
	q := store.(cimd.NetworkQuota)
	ctx := t.Context()
	if ok, wait, err := q.Take(ctx, "10.5.5.0/24", 2, time.Hour, clock); !ok || wait != 0 || err != nil {
		t.Fatalf("Take = %v, %v, %v", ok, wait, err)
	}
	if ok, _, err := q.Take(ctx, "10.5.5.0/24", 2, time.Hour, clock.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("second Take = %v, %v", ok, err)
	}
	if ok, wait, err := q.Take(ctx, "10.5.5.0/24", 2, time.Hour, clock.Add(2*time.Minute)); ok || wait != 58*time.Minute || err != nil {
		t.Fatalf("Take over the quota = %v, %v, %v; want false, 58m", ok, wait, err)
	}
	if err := q.Give(ctx, "10.5.5.0/24", clock.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := q.Take(ctx, "10.5.5.0/24", 2, time.Hour, clock.Add(2*time.Minute)); !ok || err != nil {
		t.Fatalf("Take after Give = %v, %v", ok, err)
	}

	// The window passes: the network may register again.
	clock = clock.Add(time.Hour)
	if w := register(t, replicas[1], "10.1.2.200"); w.Code != http.StatusCreated {
		t.Fatalf("after the window: status %d, want 201", w.Code)
	}

	// Redis down: no registration, on either replica, whatever the network.
	srv.Stop()
	for i, h := range replicas {
		w := register(t, h, "10.7.7."+strconv.Itoa(1+i))
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("replica %d with Redis down: status %d, want 503: %s", i, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "redis") {
			t.Errorf("the answer names the backend: %s", w.Body)
		}
	}
}
