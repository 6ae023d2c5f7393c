package stdiobridge

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// Attacks on resumption (resume.go) and eviction (evict.go) that the
// feature's own tests do not try. A test that passes documents a
// defence.

// resumeStatus sends a GET of user in sid with the Last-Event-ID values
// ids and returns its status and body (the body of an SSE answer is read
// to its end).
func resumeStatus(t *testing.T, h *harness, user, sid string, ids ...string) (int, string) {
	t.Helper()
	var hdr []string
	for _, id := range ids {
		hdr = append(hdr, "Last-Event-ID", id)
	}
	resp := send(t, http.MethodGet, h.srv.URL, user, sid, "", hdr...)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// noInflight waits until session sid has no call in flight.
func noInflight(t *testing.T, h *harness, sid string) {
	t.Helper()
	s, _ := h.b.lookup(sid)
	if s == nil {
		t.Fatalf("session %s… gone", sid[:8])
	}
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.inflight) == 0
	})
}

// TestAttackLastEventIDOdd: odd Last-Event-ID values (huge, many, not
// ASCII, negative, past uint64, leading zeros, spaces) get the fixed
// 400, and the stream stays resumable by its owner afterwards.
func TestAttackLastEventIDOdd(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "")
	stream, _, _ := strings.Cut(priming, "-")
	many := make([]string, 100)
	for i := range many {
		many[i] = priming
	}
	for _, tc := range []struct {
		name string
		ids  []string
	}{
		{"10 KB", []string{stream + "-" + strings.Repeat("1", 10<<10)}},
		{"10 KB of stream", []string{strings.Repeat(stream, 320) + "-1"}},
		{"100 headers", many},
		{"unicode digit", []string{stream + "-١"}},
		{"unicode hex", []string{"ａ" + stream[3:] + "-1"}},
		{"negative", []string{stream + "--1"}},
		{"minus one as uint64", []string{stream + "-18446744073709551615"}},
		{"uint64 overflow", []string{stream + "-18446744073709551616"}},
		{"int64 max", []string{stream + "-9223372036854775807"}},
		{"leading zeros", []string{stream + "-0001"}},
		{"space", []string{stream + "- 1"}},
		{"no dash", []string{stream + "1"}},
		{"two dashes", []string{stream + "-1-1"}},
		{"only a dash", []string{"-"}},
		{"stream only", []string{stream}},
		{"valid then empty", []string{priming, ""}},
	} {
		st, body := resumeStatus(t, h, "alice", sid, tc.ids...)
		if st != http.StatusBadRequest || body != notResumable {
			t.Errorf("%s: %d %s, want 400 %s", tc.name, st, body, notResumable)
		}
	}
	toolCall(t, h, "alice", sid, "6", "release")
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("the owner's resumption after the odd IDs: %+v", evs)
	}
}

// TestAttackResumeAgain: a client that resumes, reads part, goes again
// and resumes from an ID it had gets the same events again (the log
// keeps what it sent, the answer too, for resume_window), then from its
// last event every later one exactly once, in order, the response last.
func TestAttackResumeAgain(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	priming, progress := startWait(t, h, "alice", sid, `"n":3`)
	stream, _, _ := strings.Cut(priming, "-")
	for i := range 3 {
		resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming)
		ev, err := sseReader{bufio.NewReader(resp.Body)}.next()
		resp.Body.Close()
		if err != nil || ev.id != progress {
			t.Fatalf("resumption %d from the priming event: %+v %v, want %s", i, ev, err, progress)
		}
		waitFor(t, func() bool { return detached(h, sid, stream) })
	}
	toolCall(t, h, "alice", sid, "6", "release")
	noInflight(t, h, sid)
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", progress))
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.id)
	}
	want := []string{stream + "-2", stream + "-3", stream + "-4", stream + "-5"}
	if strings.Join(ids, " ") != strings.Join(want, " ") || !strings.Contains(evs[len(evs)-1].data, "released") {
		t.Fatalf("resumption after the release: %v, want %v, the response last", ids, want)
	}
	// The response went out on a connection, which may have failed
	// before the client read it: the same events again, in order.
	again := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", stream+"-4"))
	if len(again) != 1 || again[0].id != stream+"-5" || again[0].data != evs[len(evs)-1].data {
		t.Errorf("after the response: %+v, want the response again", again)
	}
}

// TestAttackResumeEndedSession: after DELETE, or the child's crash, a
// Last-Event-ID of the session's streams finds no session (404), and no
// other session of the user holds them.
func TestAttackResumeEndedSession(t *testing.T) {
	notFound := `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`
	for _, end := range []string{"delete", "crash"} {
		t.Run(end, func(t *testing.T) {
			h := newHarness(t, Config{})
			sid := rawSession(t, h, "alice")
			other := rawSession(t, h, "alice")
			priming, _ := startWait(t, h, "alice", sid, "")
			switch end {
			case "delete":
				resp := send(t, http.MethodDelete, h.srv.URL, "alice", sid, "")
				resp.Body.Close()
			case "crash":
				events(t, send(t, http.MethodPost, h.srv.URL, "alice", sid, toolBody("7", "crash", "")))
				waitFor(t, func() bool { s, _ := h.b.lookup(sid); return s == nil })
			}
			if st, body := resumeStatus(t, h, "alice", sid, priming); st != http.StatusNotFound || body != notFound {
				t.Errorf("resume in the ended session: %d %s", st, body)
			}
			if st, body := resumeStatus(t, h, "alice", other, priming); st != http.StatusBadRequest || body != notResumable {
				t.Errorf("resume in another session of the user: %d %s", st, body)
			}
		})
	}
}

// TestAttackEvictBusy: at max_per_user, a session whose call goes on
// with its client gone (detached) is not idle: a new session of the user
// gets 503, and the call's answer is then resumed.
func TestAttackEvictBusy(t *testing.T) {
	h := newHarness(t, Config{MaxPerUser: 1})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "")
	resp := send(t, http.MethodPost, h.srv.URL, "alice", "", initBody)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("initialize with the user's only session running a detached call: %d, want 503", resp.StatusCode)
	}
	toolCall(t, h, "alice", sid, "6", "release")
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("resumption: %+v", evs)
	}
}

// TestAttackEvictUndelivered: a session holding the answer of a call
// whose client went (resumable for resume_window) is not idle: a new
// session of the user at max_per_user must not end it and lose the
// answer (the call's effects happened; its client resumes to get it).
func TestAttackEvictUndelivered(t *testing.T) {
	h := newHarness(t, Config{MaxPerUser: 1})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "")
	toolCall(t, h, "alice", sid, "6", "release")
	noInflight(t, h, sid)
	resp := send(t, http.MethodPost, h.srv.URL, "alice", "", initBody)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfter {
		t.Errorf("initialize with the user's only session holding an undelivered answer: %d Retry-After %q, want 503 %q", resp.StatusCode, resp.Header.Get("Retry-After"), retryAfter)
	}
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("resumption of the answer: %+v", evs)
	}
	// Delivered: the session is idle again and makes room.
	resp = send(t, http.MethodPost, h.srv.URL, "alice", "", initBody)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("initialize once the answer was delivered: %d, want 200", resp.StatusCode)
	}
}

// TestAttackResumeCycles: many disconnect/resume cycles leave no
// goroutine behind, and the streams kept (answered, resumable for
// resume_window) within the session's bounds: the oldest go first.
func TestAttackResumeCycles(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	s, _ := h.b.lookup(sid)
	rawClient.CloseIdleConnections()
	base := runtime.NumGoroutine()
	for i := range 100 {
		priming, progress := startWait(t, h, "alice", sid, "")
		// Resume, take one event's worth (none yet), go, resume again.
		resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming)
		ev, err := sseReader{bufio.NewReader(resp.Body)}.next()
		resp.Body.Close()
		if err != nil || ev.id != progress {
			t.Fatalf("cycle %d: first resumption %+v %v, want %s", i, ev, err, progress)
		}
		stream, _, _ := strings.Cut(priming, "-")
		waitFor(t, func() bool { return detached(h, sid, stream) })
		toolCall(t, h, "alice", sid, "6", "release")
		evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", progress))
		if len(evs) != 2 || !strings.Contains(evs[1].data, "released") {
			t.Fatalf("cycle %d: second resumption %+v", i, evs)
		}
		noInflight(t, h, sid)
	}
	s.mu.Lock()
	n, evN, evBytes := len(s.streams), s.evN, s.evBytes
	s.mu.Unlock()
	// 200 answered streams (wait's and release's) exceed 256 events.
	if n > h.b.cfg.MaxQueued || evN > h.b.cfg.MaxQueued || evBytes > resumeBytes(h.b.cfg.MaxMessageBytes) {
		t.Errorf("after 100 cycles the session keeps %d streams, %d events, %d bytes", n, evN, evBytes)
	}
	rawClient.CloseIdleConnections()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base })
}

// TestAttackDirTokenValues: {dir} is replaced once, by the rendered
// directory, which holds no {dir} of its own whatever the user's names;
// {DIR} and a partial token are left as they are.
func TestAttackDirTokenValues(t *testing.T) {
	d, err := parseDir("/srv/mcp/{subject}/{tenant}")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{
		{Key: "k", Subject: "{dir}", Tenant: "{dir}"},
		{Key: "k", Subject: "a b", Tenant: "x\n=y"},
		{Key: "k", Subject: "..", Tenant: "../../etc"},
	} {
		dir := "/srv/mcp/" + d.render(u)
		if strings.Contains(dir, "{") || strings.Contains(dir, " ") || strings.Contains(dir, "\n") || strings.Contains(dir, "..") || strings.Count(dir, "/") != 4 {
			t.Errorf("rendered %q for %+v", dir, u)
		}
		for in, want := range map[string]string{
			"{dir}{dir}":   dir + dir,
			"{DIR}":        "{DIR}",
			"{dir":         "{dir",
			"{{dir}}":      "{" + dir + "}",
			"X={dir}/f":    "X=" + dir + "/f",
			"{dir}/{dir}/": dir + "/" + dir + "/",
		} {
			if got := withDir(in, dir); got != want {
				t.Errorf("withDir(%q, %q) = %q, want %q", in, dir, got, want)
			}
		}
	}
}

// TestAttackQueueBytes: what a child sends with no request in flight
// before the first GET stream is kept within the session's byte bound
// too, not max_queued messages of max_message_bytes each (256 × 4 MiB,
// a GiB per session by default).
func TestAttackQueueBytes(t *testing.T) {
	h := newHostile(t, Config{MaxMessageBytes: 1 << 10}, nil)
	sid := open(t, h, "alice")
	if a := tool(t, h, "alice", sid, "flood", `{"n":300,"size":900,"after":true}`); a.text() != "flooding" {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	waitFor(t, func() bool { return strings.Contains(h.log.String(), "child message dropped: queue full") })
	s, _ := h.b.lookup(sid)
	s.mu.Lock()
	n, bytes := len(s.queue), 0
	for _, m := range s.queue {
		bytes += len(m.msg)
	}
	s.mu.Unlock()
	if max := resumeBytes(h.b.cfg.MaxMessageBytes); bytes > max {
		t.Errorf("%d messages of %d bytes queued for the first GET stream, want at most %d bytes", n, bytes, max)
	}
}

// TestAttackGETNotRead: a client that opens its GET stream and never
// reads it while the child floods notifications holds the session's
// kept events within its bounds (the bridge does not buffer what TCP
// does not take), and the session goes on serving calls.
func TestAttackGETNotRead(t *testing.T) {
	h := newHostile(t, Config{MaxMessageBytes: 1 << 10}, nil)
	sid := open(t, h, "alice")
	get := openGET(t, h, "alice", sid)
	defer get.Body.Close() // never read
	if a := tool(t, h, "alice", sid, "flood", `{"n":20000,"size":900,"after":true}`); a.text() != "flooding" {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	waitFor(t, func() bool {
		return strings.Contains(h.log.String(), "child messages dropped: over the session's stream buffer bound")
	})
	s, _ := h.b.lookup(sid)
	bound := resumeBytes(h.b.cfg.MaxMessageBytes)
	for range 3 {
		if a := tool(t, h, "alice", sid, "pid", ""); a.status != http.StatusOK || a.text() == "" {
			t.Fatalf("a call during the flood: %d %v", a.status, a.msgs)
		}
		s.mu.Lock()
		n, b, q := s.evN, s.evBytes, len(s.queue)
		s.mu.Unlock()
		if n > h.b.cfg.MaxQueued || b > bound || q != 0 {
			t.Fatalf("kept %d events, %d bytes, %d queued: over max_queued %d, %d bytes", n, b, q, h.b.cfg.MaxQueued, bound)
		}
	}
}

// TestAttackStreamsBounded: answers whose clients went, pushed out of
// the session's bound by later ones, are no longer resumable and are
// forgotten with their streams then, not kept empty (each with its
// timer) for resume_window: the streams a session holds stay within
// max_queued however many calls its clients abandon.
func TestAttackStreamsBounded(t *testing.T) {
	h := newHarness(t, Config{MaxQueued: 4})
	sid := rawSession(t, h, "alice")
	s, _ := h.b.lookup(sid)
	for range 12 {
		startWait(t, h, "alice", sid, "")
		toolCall(t, h, "alice", sid, "6", "release")
		noInflight(t, h, sid)
	}
	s.mu.Lock()
	n, evN := len(s.streams), s.evN
	s.mu.Unlock()
	if n > h.b.cfg.MaxQueued || evN > h.b.cfg.MaxQueued {
		t.Errorf("the session holds %d streams, %d events after 12 abandoned answers, want at most max_queued %d", n, evN, h.b.cfg.MaxQueued)
	}
}

// TestAttackEvictRace: concurrent initializes of one user at
// max_per_user make room for each other (each gets 200 or 503 with
// Retry-After, never another error), and the user never holds more
// children than the bound.
func TestAttackEvictRace(t *testing.T) {
	h := newHarness(t, Config{MaxPerUser: 2})
	const n = 8
	type res struct {
		status int
		body   string
	}
	out := make(chan res, n)
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(userHeader, "alice")
			resp, err := http.DefaultClient.Do(req) // no t.Fatal off the test's goroutine
			if err != nil {
				out <- res{0, err.Error()}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if c := h.b.Children(); c > 2 {
				t.Errorf("alice holds %d children, over max_per_user 2", c)
			}
			out <- res{resp.StatusCode, string(body)}
		}()
	}
	for range n {
		r := <-out
		if r.status != http.StatusOK && r.status != http.StatusServiceUnavailable {
			t.Errorf("a concurrent initialize: %d %s, want 200 or 503", r.status, r.body)
		}
	}
}

// TestAttackSharedDeleteScope: with per_user, a DELETE of one client
// session of the user's child forgets that session's streams only:
// another session's detached call goes on and is resumed by its client,
// and the deleted session's stream is not resumable from the other.
func TestAttackSharedDeleteScope(t *testing.T) {
	h := newHarness(t, Config{PerUser: true})
	keep := rawSession(t, h, "alice")
	gone := rawSession(t, h, "alice")
	kept, _ := startWait(t, h, "alice", keep, "")
	resp := send(t, http.MethodPost, h.srv.URL, "alice", gone, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"g"}}}`)
	evs := events(t, resp)
	if len(evs) == 0 {
		t.Fatal("progress in the second session: no events")
	}
	resp = send(t, http.MethodDelete, h.srv.URL, "alice", gone, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE of the second session: %d", resp.StatusCode)
	}
	if st, body := resumeStatus(t, h, "alice", keep, evs[0].id); st != http.StatusBadRequest || body != notResumable {
		t.Errorf("the deleted session's stream from the kept one: %d %s", st, body)
	}
	toolCall(t, h, "alice", keep, "6", "release")
	evs = events(t, send(t, http.MethodGet, h.srv.URL, "alice", keep, "", "Last-Event-ID", kept))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("the kept session's resumption after the other's DELETE: %+v", evs)
	}
}
