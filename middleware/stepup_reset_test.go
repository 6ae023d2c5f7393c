package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// countingStore wraps a StepUpStore and counts its calls.
type countingStore struct {
	StepUpStore
	mu            sync.Mutex
	incrs, resets int
}

func (c *countingStore) Incr(ctx context.Context, part, key string, w time.Duration, now time.Time) (int, error) {
	c.mu.Lock()
	c.incrs++
	c.mu.Unlock()
	return c.StepUpStore.Incr(ctx, part, key, w, now)
}

func (c *countingStore) Reset(ctx context.Context, part, key string) error {
	c.mu.Lock()
	c.resets++
	c.mu.Unlock()
	return c.StepUpStore.Reset(ctx, part, key)
}

func (c *countingStore) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incrs, c.resets
}

// TestStepUpSuccessResets: a user who steps up successfully in ten fresh
// sessions in a row (each starts with a token lacking the tool's scope, is
// challenged, and comes back with a token holding it) is never given the
// terminal answer. On the main branch before issue #11 the fourth session
// got the terminal 403.
func TestStepUpSuccessResets(t *testing.T) {
	for _, rev := range []string{legacyRev, modernRev} {
		t.Run(rev, func(t *testing.T) {
			store := &countingStore{StepUpStore: newMemoryStepUpStore(0)}
			f := newFixture(t, func(c *Config) { c.StepUpStore = store })
			h := f.m.Handler(echoHandler())
			for session := 1; session <= 10; session++ {
				weak := f.token(t, "mcp", "tools:call")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, rpcRequest(rev, "tools/call", "delete_repo", weak))
				if rec.Code != http.StatusForbidden || !hasScopeParam(rec) {
					t.Fatalf("session %d: got %d %q, want a 403 step-up challenge", session, rec.Code, rec.Header().Get("WWW-Authenticate"))
				}
				strong := f.token(t, "mcp", "tools:call", "repo:admin")
				rec = httptest.NewRecorder()
				h.ServeHTTP(rec, rpcRequest(rev, "tools/call", "delete_repo", strong))
				if rec.Code != http.StatusOK {
					t.Fatalf("session %d: stepped-up call got %d, want 200", session, rec.Code)
				}
				f.iss.Advance(time.Minute)
			}
			if incrs, resets := store.counts(); incrs != 10 || resets != 10 {
				t.Errorf("store calls: %d Incr, %d Reset; want 10 and 10", incrs, resets)
			}
		})
	}
}

// TestStepUpNeverGranted: a client whose authorization server never grants
// the scope is challenged StepUpLimit times and then gets the terminal
// answer, also when it succeeds meanwhile with other operations (those do
// not satisfy the challenged scope set).
func TestStepUpNeverGranted(t *testing.T) {
	f := newFixture(t, nil)
	h := f.m.Handler(echoHandler())
	tok := f.token(t, "mcp", "tools:call", "weather:read")
	for i := 1; i <= defaultStepUpLimit+2; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", tok))
		switch {
		case i <= defaultStepUpLimit && (rec.Code != http.StatusForbidden || !hasScopeParam(rec)):
			t.Fatalf("attempt %d: got %d %q, want a step-up challenge", i, rec.Code, rec.Header().Get("WWW-Authenticate"))
		case i > defaultStepUpLimit && (rec.Code != http.StatusForbidden || hasScopeParam(rec) || rec.Header().Get("WWW-Authenticate") == ""):
			t.Fatalf("attempt %d: got %d %q, want the terminal answer", i, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		// A success that does not carry the challenged scopes resets nothing.
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "get_weather", tok))
		if rec.Code != http.StatusOK {
			t.Fatalf("get_weather: %d", rec.Code)
		}
	}
}

// TestStepUpTerminalThenGranted: a principal that reached the terminal
// answer and is then granted the scope gets its bound back.
func TestStepUpTerminalThenGranted(t *testing.T) {
	f := newFixture(t, nil)
	h := f.m.Handler(echoHandler())
	weak := f.token(t, "mcp", "tools:call")
	for range defaultStepUpLimit + 1 {
		h.ServeHTTP(httptest.NewRecorder(), rpcRequest(modernRev, "tools/call", "delete_repo", weak))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", f.token(t, "mcp", "tools:call", "repo:admin")))
	if rec.Code != http.StatusOK {
		t.Fatalf("granted: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", weak))
	if !hasScopeParam(rec) {
		t.Fatalf("after success: got %d %q, want a step-up challenge again", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}

// TestStepUpRequireScopesResets: RequireScopes challenges are reset by a
// success behind RequireScopes too.
func TestStepUpRequireScopesResets(t *testing.T) {
	f := newFixture(t, nil)
	h := f.m.Handler(f.m.RequireScopes("admin")(echoHandler()))
	get := func(tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	for session := range 2 * defaultStepUpLimit {
		if rec := get(f.token(t, "mcp")); !hasScopeParam(rec) {
			t.Fatalf("session %d: got %d %q, want a challenge", session, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		if rec := get(f.token(t, "mcp", "admin")); rec.Code != http.StatusOK {
			t.Fatalf("session %d: got %d, want 200", session, rec.Code)
		}
	}
}

// TestStepUpHotPath: an authorized request makes no store call, with
// nothing pending and with other principals' step-ups pending, and
// allocates nothing more in either case.
func TestStepUpHotPath(t *testing.T) {
	store := &countingStore{StepUpStore: newMemoryStepUpStore(0)}
	f := newFixture(t, func(c *Config) { c.StepUpStore = store })
	h := f.m.Handler(noopHandler{})
	tok := f.token(t, "mcp", "tools:read")
	get := httptest.NewRequest(http.MethodGet, resource, nil)
	get.Header.Set("Authorization", "Bearer "+tok)
	w := &discardWriter{h: http.Header{}}
	base := testing.AllocsPerRun(50, func() { h.ServeHTTP(w, get) })
	if !f.m.pending.empty() {
		t.Fatal("pending not empty")
	}
	for i := range 100 {
		weak := f.iss.Token(t, authtest.Token{Subject: fmt.Sprint("other-", i), Scopes: []string{"mcp"}})
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+weak)
		f.m.RequireScopes("admin")(noopHandler{}).ServeHTTP(httptest.NewRecorder(), r.WithContext(ContextWithPrincipal(r.Context(), &Principal{Issuer: f.iss.URL, Subject: fmt.Sprint("other-", i), Scopes: []string{"mcp"}})))
	}
	if f.m.pending.empty() {
		t.Fatal("nothing pending after 100 challenges")
	}
	incrs, resets := store.counts()
	busy := testing.AllocsPerRun(50, func() { h.ServeHTTP(w, get) })
	if busy != base {
		t.Errorf("allocs with step-ups pending = %v, want %v (as with none)", busy, base)
	}
	if i2, r2 := store.counts(); i2 != incrs || r2 != resets {
		t.Errorf("authorized requests called the store: %d Incr, %d Reset", i2-incrs, r2-resets)
	}
}

type noopHandler struct{}

func (noopHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusNoContent)
}

// TestPendingSetBounded: the pending set never holds more than its bound.
func TestPendingSetBounded(t *testing.T) {
	s := newPendingSet(64)
	now := time.Unix(1e9, 0)
	for i := range 1000 {
		p := &Principal{Issuer: "i", Subject: fmt.Sprint(i), ClientID: fmt.Sprint(i % 7)}
		s.add(p, []string{"a"}, fmt.Sprint(i), now.Add(time.Minute), now)
	}
	if n := s.n.Load(); n != 64 || s.c.Len() != 64 {
		t.Fatalf("pending principals = %d (%d held), want 64", n, s.c.Len())
	}
}

func hasScopeParam(rec *httptest.ResponseRecorder) bool {
	v := rec.Header().Get("WWW-Authenticate")
	return rec.Code == http.StatusForbidden && len(v) > 0 && contains(v, ` scope="`)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestStepUpReplicas: two replicas share a store. A challenge sent by A is
// not reset by a success that only B sees (B did not challenge): the bound
// fails closed, the terminal answer comes no later than without resets.
// The first success that reaches A resets it.
func TestStepUpReplicas(t *testing.T) {
	store := newMemoryStepUpStore(0)
	f := newFixture(t, func(c *Config) { c.StepUpStore = store })
	a := f.m.Handler(echoHandler())
	b := f.with(t, func(c *Config) { c.StepUpStore = store }).m.Handler(echoHandler())
	weak, strong := f.token(t, "mcp", "tools:call"), f.token(t, "mcp", "tools:call", "repo:admin")
	call := func(h http.Handler, tok string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", tok))
		return rec
	}
	for i := range defaultStepUpLimit {
		if rec := call(a, weak); !hasScopeParam(rec) {
			t.Fatalf("A challenge %d: %d", i, rec.Code)
		}
	}
	if rec := call(b, strong); rec.Code != http.StatusOK {
		t.Fatalf("B success: %d", rec.Code)
	}
	if rec := call(a, weak); rec.Code != http.StatusForbidden || hasScopeParam(rec) {
		t.Fatalf("after a success on B only: got %d %q, want the terminal answer", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	if rec := call(a, strong); rec.Code != http.StatusOK {
		t.Fatalf("A success: %d", rec.Code)
	}
	if rec := call(a, weak); !hasScopeParam(rec) {
		t.Fatalf("after a success on A: got %d %q, want a challenge again", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}
