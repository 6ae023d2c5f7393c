package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingOwnerStore counts the Owner calls of an OwnerStore.
type countingOwnerStore struct {
	OwnerStore
	owners atomic.Int64
}

func (s *countingOwnerStore) Owner(ctx context.Context, kind, id string, ttl time.Duration) (string, error) {
	s.owners.Add(1)
	return s.OwnerStore.Owner(ctx, kind, id, ttl)
}

// TestSessionStoreStreamRenews: with a Store, a GET stream alone in its
// session, open for many times IdleTimeout, keeps its session: the
// middleware renews the store's record every half IdleTimeout while the
// stream is served (the store's clock is moved 0.9 IdleTimeout after each
// renewal, 5.4 IdleTimeout in all, and the record is still alice's), and
// this process's table does not end the session either (another user's
// requests, past IdleTimeout on the middleware's clock, sweep expired
// sessions, and alice's is not closed in the server). Before, the record
// was renewed only when a request started, so it expired in the store
// under a long stream and the session ended on every replica.
func TestSessionStoreStreamRenews(t *testing.T) {
	const idle = 40 * time.Millisecond // wall time: the renewal period is idle/2
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	store := &countingOwnerStore{OwnerStore: newMemoryOwnerStore(memoryOwnerConfig{Now: now})}
	e := newSessionEnv(t, func(c *Config) { c.Sessions.Store = store; c.Sessions.IdleTimeout = idle })
	release := make(chan struct{})
	started := make(chan struct{})
	e.h = e.f.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("X-Stream") != "" {
			w.WriteHeader(http.StatusOK)
			close(started)
			<-release
			return
		}
		e.srv.ServeHTTP(w, r)
	}))
	alice := e.tokenOf(t, "alice", "tenant-a")
	sid := e.create(t, alice)
	owner, _ := store.OwnerStore.Owner(context.Background(), kindSession, sid, idle)

	done := make(chan int)
	go func() {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("X-Stream", "1")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		done <- w.Code
	}()
	<-started
	bob := e.tokenOf(t, "bob", "tenant-b")
	for cycle := range 6 {
		before := store.owners.Load()
		for i := 0; i < 2000 && store.owners.Load() == before; i++ {
			time.Sleep(5 * time.Millisecond)
		}
		if store.owners.Load() == before {
			close(release)
			t.Fatalf("cycle %d: the store's record was not renewed while the stream was open", cycle)
		}
		advance(idle * 9 / 10)
		// Another user's request, past the idle timeout on the
		// middleware's clock, sweeps this process's expired sessions.
		e.f.iss.Advance(2 * idle)
		e.create(t, bob)
	}
	if got, _ := store.OwnerStore.Owner(context.Background(), kindSession, sid, idle); got != owner || owner == "" {
		t.Errorf("the store's record after 5.4 IdleTimeout of stream: %q, want alice's %q", got, owner)
	}
	if !e.srv.isLive(sid) {
		t.Error("the session was closed in the server while its stream was open")
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("stream: %d", code)
	}
	if w := e.do(t, http.MethodGet, alice, sid, ""); w.Code != http.StatusOK {
		t.Errorf("alice after the stream: %d, want 200", w.Code)
	}
}
