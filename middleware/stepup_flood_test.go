package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// TestStepUpPendingFlood: one client challenging for step-up at full
// speed, with a new subject on every request, for 10x the pending set's
// bound while another client's user re-authorizes, never costs that user a
// step-up: each time alice is challenged, steps up and comes back, her
// counter is reset, and she is never sent the terminal 403. Before the
// pending set was shared fairly, the flood evicted alice's pending entry,
// her successes reset nothing, and her fourth challenge was terminal.
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
			flood := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, Subject: fmt.Sprint("bot-", bot), ClientID: "mallory-app"})
			bot++
			if rec := do(flood); rec.Code != http.StatusForbidden {
				t.Fatalf("flood request %d: %d, want 403", bot, rec.Code)
			}
		}
		if rec := do(strong); rec.Code != http.StatusOK {
			t.Fatalf("alice's step-up %d: %d, want 200", cycle+1, rec.Code)
		}
	}
}
