package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// TestStepUp: with a pinned clock, the fourth challenge within the window
// for the same user and scope set is the terminal 403 (whatever the
// client), other users and scope sets count separately, and the window
// resets.
func TestStepUp(t *testing.T) {
	for _, rev := range []string{legacyRev, modernRev} {
		t.Run(rev, func(t *testing.T) {
			f := newFixture(t, nil)
			do := func(name string, spec ...authtest.Token) *httptest.ResponseRecorder {
				t.Helper()
				tk := oneSpec(t, spec)
				if tk.Scopes == nil {
					tk.Scopes = []string{"mcp", "tools:call"}
				}
				tok := f.iss.Token(t, tk)
				rec := httptest.NewRecorder()
				f.m.Handler(echoHandler()).ServeHTTP(rec, rpcRequest(rev, "tools/call", name, tok))
				return rec
			}
			challenged := func(rec *httptest.ResponseRecorder) bool {
				return rec.Code == http.StatusForbidden && strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`)
			}
			terminal := func(rec *httptest.ResponseRecorder) bool {
				return rec.Code == http.StatusForbidden && rec.Header().Get("WWW-Authenticate") == `Bearer resource_metadata="`+metadataURL+`"` &&
					rec.Body.String() == bodyInsufficient
			}
			for i := 1; i <= defaultStepUpLimit; i++ {
				if rec := do("delete_repo"); !challenged(rec) {
					t.Fatalf("attempt %d: got %d %q, want a 403 challenge", i, rec.Code, rec.Header().Get("WWW-Authenticate"))
				}
			}
			if rec := do("delete_repo"); !terminal(rec) {
				t.Fatalf("attempt %d: got %d %v %s, want the terminal 403", defaultStepUpLimit+1, rec.Code, rec.Header(), rec.Body)
			}
			// The bound is per principal and per scope set.
			if rec := do("delete_repo", authtest.Token{Subject: "user-2"}); !challenged(rec) {
				t.Errorf("other subject: got %d, want a challenge", rec.Code)
			}
			// The user is the unit: the same user through another client
			// (a client that registers anew at step-up) counts against the
			// same bound, so a new client_id buys no new step-ups; the
			// same subject at another tenant is another user.
			if rec := do("delete_repo", authtest.Token{ClientID: "client-2"}); !terminal(rec) {
				t.Errorf("other client of the same user: got %d, want the terminal 403", rec.Code)
			}
			if rec := do("delete_repo", authtest.Token{Tenant: "tenant-b"}); !challenged(rec) {
				t.Errorf("other tenant: got %d, want a challenge", rec.Code)
			}
			if rec := do("get_weather"); !challenged(rec) {
				t.Errorf("other scope set: got %d, want a challenge", rec.Code)
			}
			// Still terminal just before the window ends.
			f.iss.Advance(defaultStepUpWindow - time.Second)
			if rec := do("delete_repo"); !terminal(rec) {
				t.Fatalf("before window end: got %d, want the terminal 403", rec.Code)
			}
			// The window started at the first challenge; one second later it
			// is over and the counter restarts.
			f.iss.Advance(time.Second)
			if rec := do("delete_repo"); !challenged(rec) {
				t.Fatalf("after window: got %d, want a challenge", rec.Code)
			}
		})
	}
}

func TestStepUpDisabled(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, func(c *Config) { c.StepUpLimit = -1 })
	for i := 0; i < 10; i++ {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer x")
		m.Handler(echoHandler()).ServeHTTP(rec, r)
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("request %d: no challenge with the bound disabled", i)
		}
	}
}

type failingStore struct{}

func (failingStore) Incr(context.Context, string, string, time.Duration, time.Time) (int, error) {
	return 0, errors.New("store down")
}

func (failingStore) Reset(context.Context, string, string) error { return errors.New("store down") }

// TestStepUpStoreError: a failing store costs the bound, not the
// challenge (access is denied either way).
func TestStepUpStoreError(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, func(c *Config) { c.StepUpStore = failingStore{} })
	for i := 0; i < 5; i++ {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer x")
		m.Handler(echoHandler()).ServeHTTP(rec, r)
		if rec.Code != http.StatusForbidden || rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("request %d: got %d without challenge, want a 403 challenge", i, rec.Code)
		}
	}
}

func TestMemoryStepUpStore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	s := newMemoryStepUpStore(3)
	incr := func(key string, at time.Time) int {
		t.Helper()
		n, err := s.Incr(ctx, "p", key, time.Minute, at)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := incr("a", t0); got != 1 {
		t.Fatalf("first Incr = %d, want 1", got)
	}
	if got := incr("a", t0.Add(59*time.Second)); got != 2 {
		t.Fatalf("second Incr = %d, want 2", got)
	}
	if got := incr("a", t0.Add(time.Minute)); got != 1 {
		t.Fatalf("Incr at window end = %d, want 1 (restarted)", got)
	}
	incr("b", t0.Add(61*time.Second))
	incr("c", t0.Add(62*time.Second))
	incr("d", t0.Add(63*time.Second)) // full: evicts the oldest window ("a")
	if got := s.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	if got := incr("a", t0.Add(64*time.Second)); got != 1 {
		t.Errorf("evicted key Incr = %d, want 1", got)
	}
	// Expired counters are dropped before live ones.
	s = newMemoryStepUpStore(2)
	incr("x", t0)
	incr("y", t0.Add(30*time.Second))
	incr("y", t0.Add(31*time.Second))
	incr("z", t0.Add(time.Minute+time.Second)) // x expired
	if got := incr("y", t0.Add(time.Minute+2*time.Second)); got != 3 {
		t.Errorf("live key after eviction of expired = %d, want 3", got)
	}
	// Never more than maxKeys, whatever the load.
	s = newMemoryStepUpStore(100)
	for i := range 1000 {
		incr(fmt.Sprint(i), t0)
	}
	if got := s.Len(); got != 100 {
		t.Errorf("Len after 1000 keys = %d, want 100", got)
	}
}

// TestMemoryStepUpStoreFair: a partition adding counters for 10x the
// bound evicts only its own; another partition's counters keep counting,
// so its bound still holds.
func TestMemoryStepUpStoreFair(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	const bound = 16
	s := newMemoryStepUpStore(bound)
	for i := range 10 * bound {
		if i%bound == 0 {
			if n, _ := s.Incr(ctx, "alice-app", "alice", time.Minute, t0); n != i/bound+1 {
				t.Fatalf("alice's count after %d flood counters = %d, want %d", i, n, i/bound+1)
			}
		}
		if n, _ := s.Incr(ctx, "mallory-app", fmt.Sprint("bot-", i), time.Minute, t0); n != 1 {
			t.Fatalf("flood counter %d = %d", i, n)
		}
	}
	if s.Len() != bound {
		t.Fatalf("Len = %d, want %d", s.Len(), bound)
	}
}
