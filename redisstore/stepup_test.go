package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/redisstore"
	"github.com/mcpguard/mcpguard/validate"
)

var _ middleware.StepUpStore = (*redisstore.StepUpStore)(nil)

func TestStepUpIncrWindowAndReset(t *testing.T) {
	_, rdb := newRedis(t)
	s, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Prefix: "t:", Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for want := 1; want <= 3; want++ {
		n, err := s.Incr(ctx, "part", "iss\x00sub\x00client\x00scope", time.Minute, now)
		if err != nil || n != want {
			t.Fatalf("Incr = %d, %v; want %d", n, err, want)
		}
	}
	keys := keysWithTTL(t, rdb)
	slices.Sort(keys) // the partition's index, then its counter
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "t:stepup:{") || len(keys[0]) != len("t:stepup:{}")+43 ||
		!strings.HasPrefix(keys[1], keys[0]) || len(keys[1]) != len(keys[0])+43 {
		t.Fatalf("keys = %q, want a hashed t:stepup:{partition} index and counter", keys)
	}
	if ttl := rdb.PTTL(ctx, keys[1]).Val(); ttl > time.Minute || ttl < 50*time.Second {
		t.Errorf("PTTL = %v, want about 1m (set by the first Incr only)", ttl)
	}
	if err := s.Reset(ctx, "part", "iss\x00sub\x00client\x00scope"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Incr(ctx, "part", "iss\x00sub\x00client\x00scope", time.Minute, now); n != 1 || err != nil {
		t.Errorf("Incr after Reset = %d, %v; want 1", n, err)
	}
	if err := s.Reset(ctx, "part", "absent"); err != nil {
		t.Errorf("Reset(absent) = %v", err)
	}

	// The window is Redis's: the counter expires by itself.
	awaitExpiry(t, rdb, 50*time.Millisecond, func() {
		if n, _ := s.Incr(ctx, "part", "short", 50*time.Millisecond, now); n != 1 {
			t.Fatalf("Incr(short) = %d", n)
		}
	})
	if n, err := s.Incr(ctx, "part", "short", 50*time.Millisecond, now); n != 1 || err != nil {
		t.Errorf("Incr after the window = %d, %v; want 1 (a new window)", n, err)
	}
	if _, err := s.Incr(ctx, "part", "k", 0, now); !errors.Is(err, redisstore.ErrConfig) {
		t.Errorf("Incr(window 0) = %v, want ErrConfig", err)
	}
}

// TestStepUpAtomic: concurrent Incrs from many goroutines (as from many
// replicas) each get a distinct count.
func TestStepUpAtomic(t *testing.T) {
	srv, _ := newRedis(t)
	// Generous timeouts: 50 concurrent scripts on a loaded 2-core machine
	// exceed the default 250 ms; atomicity, not speed, is under test.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Second, PoolTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	seen := make([]bool, n+1)
	var mu sync.Mutex
	for range n {
		wg.Go(func() {
			c, err := s.Incr(context.Background(), "part", "k", time.Minute, time.Time{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if c < 1 || c > n || seen[c] {
				t.Errorf("count %d repeated or out of range", c)
				return
			}
			seen[c] = true
		})
	}
	wg.Wait()
	keysWithTTL(t, rdb)
}

const resource = "https://mcp.example.com/mcp"

// replica is one MCP server process: its own validator and middleware.
func replica(t *testing.T, iss *authtest.Issuer, store middleware.StepUpStore) http.Handler {
	t.Helper()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{resource},
		Now:       iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator:   v,
		Metadata:    prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:      []string{"mcp", "admin"},
		StepUpLimit: 3,
		StepUpStore: store,
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
}

// challenged sends token to h and reports whether the 403 carried a
// step-up challenge (false: terminal 403).
func challenged(t *testing.T, h http.Handler, token string) bool {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d, want 403", rec.Code)
	}
	return strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope")
}

// TestTwoReplicasShareStepUpBound: a client alternating between two
// replicas gets StepUpLimit challenges in all, not per replica; with
// per-process stores it would get twice as many.
func TestTwoReplicasShareStepUpBound(t *testing.T) {
	_, rdb := newRedis(t)
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	token := iss.Token(t, authtest.Token{Scopes: []string{"mcp"}})
	count := func(a, b middleware.StepUpStore) int {
		replicas := []http.Handler{replica(t, iss, a), replica(t, iss, b)}
		n := 0
		for i := range 8 {
			if challenged(t, replicas[i%2], token) {
				n++
			}
		}
		return n
	}
	shared, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if got := count(shared, shared); got != 3 {
		t.Errorf("challenges across two replicas sharing Redis = %d, want 3", got)
	}
	// Two stores (two processes' clients) on the same Redis: still one bound.
	rdb.FlushAll(t.Context())
	other, _ := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if got := count(shared, other); got != 3 {
		t.Errorf("challenges across two store values on one Redis = %d, want 3", got)
	}
	if got := count(nil, nil); got != 6 {
		t.Errorf("per-process stores = %d challenges, want 6 (the bound multiplies)", got)
	}
	keysWithTTL(t, rdb)
}

// TestStepUpSuccessResets: a success after a challenge, on the replica
// that challenged, deletes the shared counter (middleware's Reset).
func TestStepUpSuccessResets(t *testing.T) {
	_, rdb := newRedis(t)
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	store, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	a := replica(t, iss, store)
	if !challenged(t, a, iss.Token(t, authtest.Token{Subject: "alice", Scopes: []string{"mcp"}})) {
		t.Fatal("no challenge")
	}
	if n := len(keysWithTTL(t, rdb)); n != 2 {
		t.Fatalf("%d keys after a challenge, want 2 (the counter and its partition's index)", n)
	}
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Authorization", "Bearer "+iss.Token(t, authtest.Token{Subject: "alice", Scopes: []string{"mcp", "admin"}}))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("stepped-up request: %d", rec.Code)
	}
	if keys := keysWithTTL(t, rdb); len(keys) != 0 {
		t.Errorf("keys after the successful step-up = %q, want none (Reset: an empty index is no key)", keys)
	}
}

// TestStepUpPerUserPartition: the users of one shared client each have a
// partition of their own in Redis. Mallory, through the same client as
// bob, is challenged at full speed for 10x the partition bound of scope
// sets of her own, and through 1,000 client IDs for one more: bob's
// counter is never evicted, so bob's loop gets exactly StepUpLimit
// challenges and then the terminal 403, and mallory's are hers whatever
// the client. Before, the partition was the issuer and client, so
// mallory's counters evicted bob's and his loop was challenged again.
func TestStepUpPerUserPartition(t *testing.T) {
	const bound = 8
	_, rdb := newRedis(t)
	store, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	redisstore.SetPartitionKeys(store, bound)
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{resource},
		Now:       iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string][]string{"admin": {"admin"}}
	for i := range 10 * bound {
		tools[fmt.Sprint("tool", i)] = []string{fmt.Sprint("scope", i)}
	}
	m, err := middleware.New(middleware.Config{
		Validator:   v,
		Metadata:    prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:      []string{"mcp"},
		Operations:  middleware.OperationPolicy{Tools: tools},
		StepUpLimit: 3,
		StepUpStore: store,
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	call := func(tool, token string) (status int, challenge bool) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`"}}`))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope")
	}
	bob := iss.Token(t, authtest.Token{Subject: "bob", ClientID: "shared-app", Scopes: []string{"mcp"}})
	mallory := iss.Token(t, authtest.Token{Subject: "mallory", ClientID: "shared-app", Scopes: []string{"mcp"}})
	got := 0
	for i := range 2 {
		if code, ch := call("admin", bob); code != http.StatusForbidden || !ch {
			t.Fatalf("bob's challenge %d: %d %v", i+1, code, ch)
		}
		got++
	}
	for i := range 10 * bound {
		if code, _ := call(fmt.Sprint("tool", i), mallory); code != http.StatusForbidden {
			t.Fatalf("mallory's call %d: %d", i, code)
		}
	}
	malloryGot := 0
	for i := range 1000 {
		tok := iss.Token(t, authtest.Token{Subject: "mallory", ClientID: fmt.Sprintf("https://mallory.example/app-%d", i), Scopes: []string{"mcp"}})
		if code, ch := call("admin", tok); code != http.StatusForbidden {
			t.Fatalf("mallory's admin call %d: %d", i, code)
		} else if ch {
			malloryGot++
		}
	}
	if malloryGot != 3 {
		t.Errorf("mallory got %d admin challenges through 1,000 clients, want 3", malloryGot)
	}
	for range 4 {
		if _, ch := call("admin", bob); ch {
			got++
		}
	}
	if got != 3 {
		t.Errorf("bob got %d challenges for one scope set, want 3 (his counter was evicted)", got)
	}
	keysWithTTL(t, rdb)
}
