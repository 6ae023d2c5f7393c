package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// TestStepUpPendingFlood: one user challenged for step-up at full speed,
// through a new client_id on every request (CIMD and dynamic registration
// let a client choose one at will), for 10x the pending set's bound while
// another user re-authorizes, never costs that user a step-up: each time
// alice is challenged, steps up and comes back, her counter is reset, and
// she is never sent the terminal 403. The pending set holds one entry per
// user (Principal.UserID), so mallory's clients hold one between them.
// Before the pending set was shared fairly, a flood evicted alice's pending
// entry, her successes reset nothing, and her fourth challenge was
// terminal.
func TestStepUpPendingFlood(t *testing.T) {
	const bound = 16
	f := newFixture(t, nil)
	f.m.pending = newPendingSet(bound)
	h := f.m.Handler(echoHandler())
	do := func(tok string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(legacyRev, "tools/call", "delete_repo", tok))
		return rec
	}
	weak := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, Subject: "alice", ClientID: "alice-app"})
	strong := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call", "repo:admin"}, Subject: "alice", ClientID: "alice-app"})
	bot := 0
	for cycle := range 2 * defaultStepUpLimit {
		rec := do(weak)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Fatalf("alice's challenge %d: %d %q, want a 403 insufficient_scope challenge",
				cycle+1, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		// While alice re-authorizes, the flood goes on.
		for range 10 * bound {
			flood := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, Subject: "mallory", ClientID: fmt.Sprint("https://mallory.example/app-", bot)})
			bot++
			if rec := do(flood); rec.Code != http.StatusForbidden {
				// A challenge, then (mallory's bound is hers whatever the
				// client) the terminal 403.
				t.Fatalf("flood request %d: %d, want 403", bot, rec.Code)
			}
		}
		if rec := do(strong); rec.Code != http.StatusOK {
			t.Fatalf("alice's step-up %d: %d, want 200", cycle+1, rec.Code)
		}
	}
}

// TestStepUpPrincipalFlood: one principal of a shared public client (one
// client_id, many users) challenged at full speed, each time for a scope
// set of its own, for 10x the step-up store's bound, costs no other
// principal of the same client anything. Bob's valid step-ups are never
// refused, and bob's own bound still holds: his counter is not evicted,
// so his loop gets exactly StepUpLimit challenges and then the terminal
// 403. The store never holds more than its bound. Before the store shared
// a client's capacity fairly between its principals, mallory's flood
// evicted bob's counter and bob's loop was challenged again and again.
func TestStepUpPrincipalFlood(t *testing.T) {
	const bound = 16
	const flood = 10 * bound
	store := newMemoryStepUpStore(bound)
	f := newFixture(t, func(c *Config) {
		c.StepUpStore = store
		c.Operations.Tools = map[string][]string{"delete_repo": {"repo:admin"}}
		for i := range flood {
			c.Operations.Tools[fmt.Sprint("tool", i)] = []string{fmt.Sprint("scope", i)}
		}
	})
	h := f.m.Handler(echoHandler())
	do := func(tool, tok string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rpcRequest(legacyRev, "tools/call", tool, tok))
		return rec
	}
	challenge := func(rec *httptest.ResponseRecorder) bool {
		return rec.Code == http.StatusForbidden && strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`)
	}
	const client = "shared-public-app"
	mallory := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, Subject: "mallory", ClientID: client})
	weak := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, Subject: "bob", ClientID: client})
	strong := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call", "repo:admin"}, Subject: "bob", ClientID: client})
	floodRound := func() {
		t.Helper()
		for i := range flood {
			if rec := do(fmt.Sprint("tool", i), mallory); rec.Code != http.StatusForbidden {
				t.Fatalf("flood request %d: %d, want 403", i, rec.Code)
			}
		}
		if n := store.Len(); n > bound {
			t.Fatalf("step-up store holds %d counters, bound %d", n, bound)
		}
	}
	// Bob steps up successfully, again and again, while mallory floods.
	for cycle := range 2 * f.m.cfg.StepUpLimit {
		if rec := do("delete_repo", weak); !challenge(rec) {
			t.Fatalf("bob's challenge %d: %d %q, want a 403 insufficient_scope challenge", cycle+1, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		floodRound()
		if rec := do("delete_repo", strong); rec.Code != http.StatusOK {
			t.Fatalf("bob's step-up %d: %d, want 200", cycle+1, rec.Code)
		}
	}
	// Bob's client loops without ever getting the scope: his bound holds.
	for i := range f.m.cfg.StepUpLimit {
		if rec := do("delete_repo", weak); !challenge(rec) {
			t.Fatalf("bob's looping challenge %d: %d %q, want a 403 insufficient_scope challenge", i+1, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		floodRound()
	}
	if rec := do("delete_repo", weak); rec.Code != http.StatusForbidden || challenge(rec) {
		t.Fatalf("bob's challenge %d after mallory's flood: %d %q, want the terminal 403 (bob's counter was evicted)",
			f.m.cfg.StepUpLimit+1, rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}
