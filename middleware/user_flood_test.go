package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// TestUserFlood: one user acting through 1,000 client IDs (CIMD and
// dynamic registration let a client choose one at will), at full speed,
// for 10x each middleware bound, never causes the refusal of another
// user's valid request, and holds no more than one user's share:
//   - sessions: mallory creates 10x Max sessions, each through a new
//     client; she holds at most her quota, bob's live session is served
//     and bob's initialize creates a session (no 503 session table full);
//   - step-ups: mallory is challenged through 1,000 clients; her bound is
//     hers whatever the client (StepUpLimit challenges, then the terminal
//     403), the step-up store and the pending set hold one user's entry
//     for her, and bob, challenged in the middle, steps up and is never
//     sent the terminal 403.
//
// Before the user was the key, sessions were counted per (user, client):
// the flood filled the table and bob's initialize got 503; and mallory
// got StepUpLimit challenges per client ID.
func TestUserFlood(t *testing.T) {
	const clients = 1000
	const maxSessions = clients / 10
	store := newMemoryStepUpStore(clients / 10)
	e := newSessionEnv(t, func(c *Config) {
		c.Sessions = SessionConfig{Max: maxSessions, PerPrincipal: 4}
		c.StepUpStore = store
	})
	e.f.m.pending = newPendingSet(clients / 10)
	tok := func(sub, client string, scopes ...string) string {
		if scopes == nil {
			scopes = []string{"mcp", "tools:read", "tools:call"}
		}
		return e.f.iss.Token(t, authtest.Token{Subject: sub, ClientID: client, Tenant: "tenant-a", Scopes: scopes})
	}
	bob := tok("bob", "https://bob.example/app")
	bobSession := e.create(t, bob)
	mallory := func(i int) string { return tok("mallory", fmt.Sprintf("https://mallory.example/app-%d", i)) }

	// Sessions.
	refused := 0
	for i := range clients {
		if w := e.do(t, http.MethodPost, mallory(i), "", ""); w.Code != http.StatusOK {
			refused++ // at her quota, her own least recently used session ends instead
		}
		if i%100 == 99 {
			if w := e.do(t, http.MethodGet, bob, bobSession, ""); w.Code != http.StatusOK {
				t.Fatalf("bob's session after %d of mallory's: %d %s", i+1, w.Code, w.Body)
			}
			if w := e.do(t, http.MethodPost, bob, "", ""); w.Code != http.StatusOK || w.Header().Get("Mcp-Session-Id") == "" {
				t.Fatalf("bob's initialize after %d of mallory's: %d %s", i+1, w.Code, w.Body)
			}
		}
	}
	e.f.m.sessions.mu.Lock()
	held := 0
	if q := e.f.m.sessions.t.byOwner[userOf((&Principal{Issuer: e.f.iss.URL, Subject: "mallory", Tenant: "tenant-a"}).UserID())]; q != nil {
		held = q.n
	}
	total := len(e.f.m.sessions.t.byID)
	e.f.m.sessions.mu.Unlock()
	if held != 4 || total > maxSessions {
		t.Fatalf("mallory holds %d sessions (quota 4), the table %d (Max %d)", held, total, maxSessions)
	}

	if refused != 0 {
		t.Errorf("%d of mallory's initializes refused, want none (her quota evicts her own)", refused)
	}

	// Step-ups.
	h := e.f.m.Handler(echoHandler())
	call := func(token string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(legacyRev, "tools/call", "delete_repo", token))
		return rec
	}
	challenged := func(rec *httptest.ResponseRecorder) bool {
		return rec.Code == http.StatusForbidden && strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`)
	}
	bobWeak := tok("bob", "https://bob.example/app")
	bobStrong := tok("bob", "https://bob.example/app", "mcp", "tools:read", "tools:call", "repo:admin")
	got := 0
	for i := range clients {
		rec := call(mallory(i))
		if rec.Code != http.StatusForbidden {
			t.Fatalf("mallory's call %d: %d, want 403", i, rec.Code)
		}
		if challenged(rec) {
			got++
		}
		if i%100 == 50 {
			if rec := call(bobWeak); !challenged(rec) {
				t.Fatalf("bob's challenge after %d of mallory's: %d %q", i+1, rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
			if rec := call(bobStrong); rec.Code != http.StatusOK {
				t.Fatalf("bob's step-up after %d of mallory's: %d", i+1, rec.Code)
			}
		}
	}
	if got != defaultStepUpLimit {
		t.Errorf("mallory got %d challenges through %d clients, want %d", got, clients, defaultStepUpLimit)
	}
	if n := store.Len(); n > 2 {
		t.Errorf("the step-up store holds %d counters, want at most mallory's and bob's", n)
	}
}
