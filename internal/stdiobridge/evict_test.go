package stdiobridge

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBoundsEvictIdle: at a process bound, a new session of a user ends
// that user's least recently used idle child (a client that left without
// DELETE), never a busy one (a request in flight, a GET stream open) and
// never another user's; with none idle, 503 with Retry-After.
func TestBoundsEvictIdle(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 3, MaxPerUser: 2})
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	alive := func(user, sid string) int { return post(t, h, user, sid, ping).status }
	initStatus := func(user string) (int, string, string) {
		resp := rawPost(t, h.srv.URL, user, "", initBody)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), resp.Header.Get("Retry-After")
	}
	// Two sessions of alice whose clients left without DELETE.
	a1, a2 := open(t, h, "alice"), open(t, h, "alice")
	if got := alive("alice", a2); got != http.StatusOK {
		t.Fatalf("a2 ping: %d", got)
	}
	// A third ends the least recently used (a1; a2 was just used).
	st, a3, _ := initStatus("alice")
	if st != http.StatusOK {
		t.Fatalf("alice's third initialize at max_per_user 2 with two idle sessions: %d, want 200", st)
	}
	if got := alive("alice", a1); got != http.StatusNotFound {
		t.Errorf("a1, least recently used, after the third initialize: %d, want 404", got)
	}
	if got := alive("alice", a2); got != http.StatusOK {
		t.Errorf("a2 after the third initialize: %d, want 200", got)
	}
	// Busy: a2 with its GET stream open, a3 with a request in flight.
	defer openGET(t, h, "alice", a2).Body.Close()
	notifyInit := post(t, h, "alice", a3, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if notifyInit.status != http.StatusAccepted {
		t.Fatalf("a3 initialized: %d", notifyInit.status)
	}
	hung := make(chan struct{})
	defer func() {
		// End a3 (its hung call gets its error) before the server closes,
		// which waits for every handler.
		del, _ := http.NewRequest(http.MethodDelete, h.srv.URL, nil)
		del.Header.Set(userHeader, "alice")
		del.Header.Set("Mcp-Session-Id", a3)
		if resp, err := http.DefaultClient.Do(del); err == nil {
			resp.Body.Close()
		}
		<-hung
	}()
	go func() {
		defer close(hung)
		resp := rawPost(t, h.srv.URL, "alice", a3, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hang","arguments":{}}}`)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		h.b.mu.Lock()
		v := h.b.idlestLocked("https://as.example|alice", time.Time{})
		h.b.mu.Unlock()
		if v == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's sessions not busy within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, _, ra := initStatus("alice"); st != http.StatusServiceUnavailable || ra != retryAfter {
		t.Errorf("alice's initialize with both sessions busy: %d Retry-After %q, want 503 %q", st, ra, retryAfter)
	}
	// Bob takes the last child; carol, with nothing of hers to end, gets
	// 503 and bob's session, idle for less than othersIdleAfter, is not
	// ended for her.
	b1 := open(t, h, "bob")
	if st, _, ra := initStatus("carol"); st != http.StatusServiceUnavailable || ra != retryAfter {
		t.Errorf("carol at max_children: %d Retry-After %q, want 503 %q", st, ra, retryAfter)
	}
	if got := alive("bob", b1); got != http.StatusOK {
		t.Errorf("bob's idle session after carol's refused initialize: %d, want 200", got)
	}
	// At max_children, bob's own idle session makes room for his next.
	if st, _, _ := initStatus("bob"); st != http.StatusOK {
		t.Errorf("bob's second initialize at max_children with his own idle session: %d, want 200", st)
	}
	if got := alive("bob", b1); got != http.StatusNotFound {
		t.Errorf("bob's first session after his second initialize: %d, want 404", got)
	}
	for _, sid := range []string{a2, a3} {
		if got := alive("alice", sid); got != http.StatusOK {
			t.Errorf("alice's busy session %s…: %d, want 200", sid[:8], got)
		}
	}
	// Bob's client leaves without DELETE: once his session has been idle
	// for othersIdleAfter, it ends for carol at max_children (the busy
	// ones of alice, used long ago too, do not).
	b2 := bobsNewest(t, h, b1)
	for _, sid := range []string{a2, a3, b2} {
		backdate(t, h, sid, othersIdleAfter+time.Second)
	}
	st, c1, _ := initStatus("carol")
	if st != http.StatusOK {
		t.Fatalf("carol at max_children with bob's session idle for %v: %d, want 200", othersIdleAfter+time.Second, st)
	}
	if got := alive("bob", b2); got != http.StatusNotFound {
		t.Errorf("bob's session idle for %v after carol's initialize: %d, want 404", othersIdleAfter+time.Second, got)
	}
	for _, sid := range []string{a2, a3} {
		if got := alive("alice", sid); got != http.StatusOK {
			t.Errorf("alice's busy session %s… after carol's initialize: %d, want 200", sid[:8], got)
		}
	}
	// Carol's new session, idle but for less than othersIdleAfter, does
	// not end for dave.
	if st, _, ra := initStatus("dave"); st != http.StatusServiceUnavailable || ra != retryAfter {
		t.Errorf("dave at max_children, carol's session just used: %d Retry-After %q, want 503 %q", st, ra, retryAfter)
	}
	if got := alive("carol", c1); got != http.StatusOK {
		t.Errorf("carol's session after dave's refused initialize: %d, want 200", got)
	}
}

// bobsNewest returns bob's one session other than old.
func bobsNewest(t *testing.T, h *harness, old string) string {
	t.Helper()
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	for id, s := range h.b.sessions {
		if id != old && s.user.Key == "https://as.example|bob" {
			return id
		}
	}
	t.Fatal("bob has no second session")
	return ""
}

// backdate makes session sid last used d earlier.
func backdate(t *testing.T, h *harness, sid string, d time.Duration) {
	t.Helper()
	s, _ := h.b.lookup(sid)
	if s == nil {
		t.Fatalf("no session %s", sid)
	}
	s.mu.Lock()
	s.last = s.last.Add(-d)
	s.mu.Unlock()
}

// openGET opens the GET stream of session sid of user.
func openGET(t *testing.T, h *harness, user, sid string) *http.Response {
	t.Helper()
	get, _ := http.NewRequest(http.MethodGet, h.srv.URL, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set(userHeader, user)
	get.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatalf("GET of %s: %v", user, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET of %s: %d", user, resp.StatusCode)
	}
	return resp
}

// TestIdleKeepsUndelivered: a session that keeps the answer of a call
// whose client went is not idle for the idle janitor either, so that an
// idle_timeout shorter than the resume window does not end it and lose
// the answer; once the answer is delivered, its idle time counts again.
func TestIdleKeepsUndelivered(t *testing.T) {
	h := newHarness(t, Config{IdleTimeout: time.Hour})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "")
	toolCall(t, h, "alice", sid, "6", "release")
	noInflight(t, h, sid)
	s, _ := h.b.lookup(sid)
	later := time.Now().Add(24 * time.Hour)
	if d := s.idleSince(later); d != 0 {
		t.Errorf("idle for %v a day later while it keeps an undelivered answer, want 0", d)
	}
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("resumption of the answer: %+v", evs)
	}
	waitFor(t, func() bool { return s.idleSince(later) > 0 })
}
