package stdiobridge

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseEv is one event as a client reads it.
type sseEv struct {
	id, event, data string
	hasID, retry    bool
}

type sseReader struct{ br *bufio.Reader }

// next reads one event; io.EOF when the stream ends.
func (r sseReader) next() (sseEv, error) {
	var ev sseEv
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			return ev, io.EOF
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		seen = true
		name, val, _ := strings.Cut(line, ":")
		val = strings.TrimPrefix(val, " ")
		switch name {
		case "id":
			ev.id, ev.hasID = val, true
		case "event":
			ev.event = val
		case "data":
			ev.data = val
		case "retry":
			ev.retry = true
		}
	}
}

// rawClient closes its connection with each answer's body.
var rawClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// send sends one request of user in session sid with the given extra
// headers (a key given twice: "Last-Event-ID" and "Last-Event-ID\x00").
func send(t *testing.T, method, url, user, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set(userHeader, user)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawSession initializes a session of user and returns its id.
func rawSession(t *testing.T, h *harness, user string) string {
	t.Helper()
	resp := send(t, http.MethodPost, h.srv.URL, user, "", initBody)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	resp = send(t, http.MethodPost, h.srv.URL, user, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return sid
}

// events reads a whole SSE answer.
func events(t *testing.T, resp *http.Response) []sseEv {
	t.Helper()
	defer resp.Body.Close()
	var evs []sseEv
	r := sseReader{bufio.NewReader(resp.Body)}
	for {
		ev, err := r.next()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

// toolCall answers a raw call of tool: its result's text, or "".
func toolCall(t *testing.T, h *harness, user, sid, id, tool string) string {
	t.Helper()
	evs := events(t, send(t, http.MethodPost, h.srv.URL, user, sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`))
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].data
}

// detached reports whether stream id of session sid has no reader.
func detached(h *harness, sid, id string) bool {
	s, _ := h.b.lookup(sid)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	return st != nil && !st.reader
}

const waitCall = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{ARGS},"_meta":{"progressToken":"p1"}}}`

// startWait POSTs the wait tool with args, reads its priming event and
// first progress, and cuts the connection: it returns the two event IDs.
func startWait(t *testing.T, h *harness, user, sid, args string) (priming, progress string) {
	t.Helper()
	resp := send(t, http.MethodPost, h.srv.URL, user, sid, strings.Replace(waitCall, "ARGS", args, 1))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("wait: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	defer resp.Body.Close() // also on failure, so that the server can close
	r := sseReader{bufio.NewReader(resp.Body)}
	p, err := r.next()
	if err != nil || !p.hasID || p.data != "" || p.event != "" || p.retry {
		t.Fatalf("first event %+v (%v), want a priming event: an id, empty data, no retry", p, err)
	}
	ev, err := r.next()
	if err != nil || !ev.hasID || ev.event != "message" || !strings.Contains(ev.data, `"method":"notifications/progress"`) || !strings.Contains(ev.data, `"progress":1`) {
		t.Fatalf("second event %+v (%v), want progress 1", ev, err)
	}
	resp.Body.Close()
	stream, _, _ := strings.Cut(p.id, "-")
	waitFor(t, func() bool { return detached(h, sid, stream) })
	return p.id, ev.id
}

// TestResumeAfterDisconnect: a POST whose client goes mid-call is not
// cancelled; a GET with the Last-Event-ID of its last event gets exactly
// the events after it, the response last, and the stream ends; the
// stream stays resumable for resume_window (a client may not have read
// what was written).
func TestResumeAfterDisconnect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		from  func(priming, progress string) string
		wantN int // events replayed before the response
	}{
		{"after progress 1", func(_, p string) string { return p }, 1},
		{"after the priming event", func(p, _ string) string { return p }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			sid := rawSession(t, h, "alice")
			priming, progress := startWait(t, h, "alice", sid, "")
			if got := toolCall(t, h, "alice", sid, "6", "release"); !strings.Contains(got, `"isError":false`) && !strings.Contains(got, `ok`) {
				t.Fatalf("release: %s", got)
			}
			from := tc.from(priming, progress)
			resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", from)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("resume: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			evs := events(t, resp)
			stream, _, _ := strings.Cut(priming, "-")
			if len(evs) != tc.wantN+1 {
				t.Fatalf("replayed %d events, want %d: %+v", len(evs), tc.wantN+1, evs)
			}
			for i, ev := range evs {
				want := stream + "-" + itoaS(int64(3-len(evs)+i+1))
				if ev.id != want || ev.event != "message" {
					t.Errorf("event %d: id %q event %q, want %q message", i, ev.id, ev.event, want)
				}
			}
			last := evs[len(evs)-1].data
			if !strings.HasPrefix(last, `{"jsonrpc":"2.0","id":5,"result":`) || !strings.Contains(last, `released`) {
				t.Fatalf("last event %s, want the response to id 5: released", last)
			}
			if !strings.Contains(evs[len(evs)-2].data, `"progress":2`) {
				t.Errorf("event before the response: %s, want progress 2", evs[len(evs)-2].data)
			}
			if got := toolCall(t, h, "alice", sid, "7", "cancelled"); !strings.Contains(got, `"structuredContent":{"text":"0"}`) {
				t.Errorf("the child saw a cancellation: cancelled = %s", got)
			}
			// Written on a connection, and still resumable for
			// resume_window: the same events again, then the end.
			again := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", from))
			if len(again) != len(evs) || again[len(again)-1].data != last {
				t.Errorf("resume again: %+v, want the %d events again", again, len(evs))
			}
		})
	}
}

func itoaS(n int64) string { return string(itoa(n)) }

const notResumable = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Last-Event-ID is not resumable"}}`

// TestResumeRefused: a Last-Event-ID that is malformed, unknown, beyond
// the stream, of another client session or of another user is refused
// with fixed answers, and the stream stays resumable by its owner.
func TestResumeRefused(t *testing.T) {
	h := newHarness(t, Config{PerUser: true})
	sid := rawSession(t, h, "alice")
	other := rawSession(t, h, "alice") // another client session of the same child
	priming, _ := startWait(t, h, "alice", sid, "")
	stream, _, _ := strings.Cut(priming, "-")
	for _, tc := range []struct {
		name, user, sid string
		ids             []string
		status          int
	}{
		{"not hex", "alice", sid, []string{"zz" + stream[2:] + "-1"}, 400},
		{"upper case", "alice", sid, []string{strings.ToUpper(stream) + "-1"}, 400},
		{"no seq", "alice", sid, []string{stream + "-"}, 400},
		{"leading zero", "alice", sid, []string{stream + "-01"}, 400},
		{"sign", "alice", sid, []string{stream + "-+1"}, 400},
		{"overflow", "alice", sid, []string{stream + "-99999999999999999999"}, 400},
		{"short stream", "alice", sid, []string{stream[1:] + "-1"}, 400},
		{"unknown stream", "alice", sid, []string{strings.Repeat("ab", 16) + "-1"}, 400},
		{"beyond the stream", "alice", sid, []string{stream + "-2"}, 400},
		{"several", "alice", sid, []string{priming, priming}, 400},
		{"another client session", "alice", other, []string{priming}, 400},
		{"another user", "bob", sid, []string{priming}, 404},
	} {
		var hdr []string
		for _, id := range tc.ids {
			hdr = append(hdr, "Last-Event-ID", id)
		}
		resp := send(t, http.MethodGet, h.srv.URL, tc.user, tc.sid, "", hdr...)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := notResumable
		if tc.status == 404 {
			want = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`
		}
		if resp.StatusCode != tc.status || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %s, want %d %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, want)
		}
	}
	// Still its owner's.
	toolCall(t, h, "alice", sid, "6", "release")
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Fatalf("owner's resume: %+v", evs)
	}
}

// TestResumeOverflow: a detached stream that gets more events than the
// session keeps is no longer resumable (fail closed), and its request
// is not cancelled.
func TestResumeOverflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		args string
	}{
		{"events", Config{MaxQueued: 4}, `"n":6`},
		{"bytes", Config{MaxMessageBytes: 1 << 10}, `"n":5,"pad":850`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			sid := rawSession(t, h, "alice")
			startWait(t, h, "alice", sid, `"n":1,"pad":10`)
			// A second call, detached and released with more than the bound.
			p2, _ := startWait(t, h, "alice", sid, tc.args)
			toolCall(t, h, "alice", sid, "6", "release")
			toolCall(t, h, "alice", sid, "7", "release")
			s, _ := h.b.lookup(sid)
			waitFor(t, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.inflight) == 0
			})
			resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", p2)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || string(body) != notResumable {
				t.Errorf("overflowed stream: %d %s", resp.StatusCode, body)
			}
			if !strings.Contains(h.log.String(), "child messages dropped: over the session's stream buffer bound") {
				t.Errorf("no overflow logged:\n%s", h.log.String())
			}
			if got := toolCall(t, h, "alice", sid, "8", "cancelled"); !strings.Contains(got, `"structuredContent":{"text":"0"}`) {
				t.Errorf("cancelled = %s", got)
			}
			s.mu.Lock()
			n, bytes := s.evN, s.evBytes
			s.mu.Unlock()
			if n > h.b.cfg.MaxQueued || bytes > resumeBytes(h.b.cfg.MaxMessageBytes) {
				t.Errorf("session keeps %d events, %d bytes: over the bounds", n, bytes)
			}
		})
	}
}

// TestResumeGETStream: the GET stream's events are resumable too: a
// request of the child sent while no GET stream is open is kept and
// replayed after the Last-Event-ID of the stream's last event read.
func TestResumeGETStream(t *testing.T) {
	h := newHarness(t, Config{ForwardRoots: true})
	sid := rawSession(t, h, "alice")
	changed := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "")
	r := sseReader{bufio.NewReader(resp.Body)}
	post := send(t, http.MethodPost, h.srv.URL, "alice", sid, changed)
	post.Body.Close()
	ev, err := r.next()
	if err != nil || !ev.hasID || !strings.Contains(ev.data, `"method":"roots/list"`) {
		t.Fatalf("GET event %+v %v, want roots/list", ev, err)
	}
	resp.Body.Close()
	stream, _, _ := strings.Cut(ev.id, "-")
	waitFor(t, func() bool { return detached(h, sid, stream) })
	post = send(t, http.MethodPost, h.srv.URL, "alice", sid, changed)
	post.Body.Close()
	s, _ := h.b.lookup(sid)
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.streams[stream] != nil && s.streams[stream].next == 3
	})
	resp = send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", ev.id)
	r = sseReader{bufio.NewReader(resp.Body)}
	ev2, err := r.next()
	resp.Body.Close()
	if err != nil || ev2.id != stream+"-2" || !strings.Contains(ev2.data, `"method":"roots/list"`) {
		t.Fatalf("resumed GET event %+v %v, want %s-2 roots/list", ev2, err, stream)
	}
}

// TestAbandonedStreamsFreed: streams whose clients go and never resume
// are forgotten after the resume window, with no goroutine left; the
// end of the session frees the rest.
func TestAbandonedStreamsFreed(t *testing.T) {
	h := newHarness(t, Config{ResumeWindow: 1})
	sid := rawSession(t, h, "alice")
	s, _ := h.b.lookup(sid)
	base := runtime.NumGoroutine()
	for range 20 {
		startWait(t, h, "alice", sid, "")
		toolCall(t, h, "alice", sid, "6", "release")
		// Its progress token is the next call's: the call ends first.
		waitFor(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.inflight) == 0
		})
	}
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.streams) == 0 && s.evN == 0 && s.evBytes == 0 && len(s.inflight) == 0
	})
	rawClient.CloseIdleConnections()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base })
	resp := send(t, http.MethodDelete, h.srv.URL, "alice", sid, "")
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.streams) != 0 || len(s.getLogs) != 0 || s.evN != 0 {
		t.Errorf("after DELETE: %d streams, %d GET streams, %d events", len(s.streams), len(s.getLogs), s.evN)
	}
}

// TestStreamsFreedAtSessionEnd: detached streams are freed at DELETE.
func TestStreamsFreedAtSessionEnd(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	s, _ := h.b.lookup(sid)
	startWait(t, h, "alice", sid, "")
	resp := send(t, http.MethodGet, h.srv.URL, "alice", sid, "")
	resp.Body.Close()
	resp = send(t, http.MethodDelete, h.srv.URL, "alice", sid, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.streams) != 0 || len(s.getLogs) != 0 || s.evN != 0 || s.evBytes != 0 {
		t.Errorf("after DELETE: %d streams, %d GET streams, %d events, %d bytes", len(s.streams), len(s.getLogs), s.evN, s.evBytes)
	}
}

func TestParseEventID(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 2)
	for _, tc := range []struct {
		in  string
		seq int64
		ok  bool
	}{
		{id + "-0", 0, true},
		{id + "-1", 1, true},
		{id + "-9223372036854775807", 1<<63 - 1, true},
		{id + "-9223372036854775808", 0, false},
		{id + "-00", 0, false},
		{id + "-", 0, false},
		{id + "1", 0, false},
		{id[1:] + "-1", 0, false},
		{id + "-1 ", 0, false},
		{"", 0, false},
		{strings.ToUpper(id) + "-1", 0, false},
		{id + "--1", 0, false},
	} {
		stream, seq, err := parseEventID(tc.in)
		if (err == nil) != tc.ok || tc.ok && (stream != id || seq != tc.seq) {
			t.Errorf("parseEventID(%q) = %q, %d, %v", tc.in, stream, seq, err)
		}
	}
}

// TestResumeTakeover: a newer resumption of a stream takes it over: the
// older connection ends, the newer one gets the rest and the response.
func TestResumeTakeover(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "")
	stream, _, _ := strings.Cut(priming, "-")
	first := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming)
	r1 := sseReader{bufio.NewReader(first.Body)}
	if ev, err := r1.next(); err != nil || ev.id != stream+"-1" {
		t.Fatalf("first resumption: %+v %v", ev, err)
	}
	second := send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming)
	r2 := sseReader{bufio.NewReader(second.Body)}
	if ev, err := r2.next(); err != nil || ev.id != stream+"-1" {
		t.Fatalf("second resumption: %+v %v", ev, err)
	}
	if ev, err := r1.next(); err != io.EOF {
		t.Fatalf("the first resumption goes on: %+v %v", ev, err)
	}
	first.Body.Close()
	toolCall(t, h, "alice", sid, "6", "release")
	var ids []string
	for {
		ev, err := r2.next()
		if err != nil {
			break
		}
		ids = append(ids, ev.id)
	}
	second.Body.Close()
	if want := []string{stream + "-2", stream + "-3"}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("second resumption after the release: %v, want %v", ids, want)
	}
}

// TestResumeServerRequest: a request of the child (sampling) sent for a
// call whose client went is replayed on the resumed stream; the client's
// answer reaches the child, and the call's result follows.
func TestResumeServerRequest(t *testing.T) {
	h := newHarness(t, Config{})
	resp := send(t, http.MethodPost, h.srv.URL, "alice", "", strings.Replace(initBody, `"capabilities":{}`, `"capabilities":{"sampling":{}}`, 1))
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = send(t, http.MethodPost, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	resp = send(t, http.MethodPost, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample","arguments":{}}}`)
	p, err := sseReader{bufio.NewReader(resp.Body)}.next()
	resp.Body.Close()
	if err != nil || !p.hasID || p.data != "" {
		t.Fatalf("priming event %+v %v", p, err)
	}
	stream, _, _ := strings.Cut(p.id, "-")
	waitFor(t, func() bool { return detached(h, sid, stream) })
	resp = send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", p.id)
	r := sseReader{bufio.NewReader(resp.Body)}
	defer resp.Body.Close()
	ev, err := r.next()
	if err != nil || ev.id != stream+"-1" || !strings.Contains(ev.data, `"method":"sampling/createMessage"`) {
		t.Fatalf("replayed %+v %v, want the sampling request", ev, err)
	}
	_, idAt, _ := strings.Cut(ev.data, `"id":`)
	id, _, _ := strings.Cut(idAt, ",")
	answer := `{"jsonrpc":"2.0","id":` + id + `,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"pong"}}}`
	post := send(t, http.MethodPost, h.srv.URL, "alice", sid, answer)
	post.Body.Close()
	if post.StatusCode != http.StatusAccepted {
		t.Fatalf("the client's answer: %d", post.StatusCode)
	}
	ev, err = r.next()
	if err != nil || ev.id != stream+"-2" || !strings.HasPrefix(ev.data, `{"jsonrpc":"2.0","id":5,"result":`) || !strings.Contains(ev.data, "sampled:pong") {
		t.Fatalf("after the answer: %+v %v, want the call's result", ev, err)
	}
	if _, err := r.next(); err != io.EOF {
		t.Fatalf("the stream goes on after the response: %v", err)
	}
}

// TestResumeCancelled: the client's notifications/cancelled still
// cancels a call whose connection went (the child sees it); a call so
// cancelled that the child never answers is forgotten at the request
// timeout (brought forward by the test), with its stream, and the
// session lives on (it is not hung).
func TestResumeCancelled(t *testing.T) {
	h := newHarness(t, Config{})
	sid := rawSession(t, h, "alice")
	startWait(t, h, "alice", sid, "")
	cancel := func(id string) {
		resp := send(t, http.MethodPost, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"user"}}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel: %d", resp.StatusCode)
		}
	}
	cancel("5")
	waitFor(t, func() bool {
		return strings.Contains(toolCall(t, h, "alice", sid, "7", "cancelled"), `"structuredContent":{"text":"1"}`)
	})
	// hang ignores its cancellation: no answer ever comes.
	resp := send(t, http.MethodPost, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"hang","arguments":{}}}`)
	p, err := sseReader{bufio.NewReader(resp.Body)}.next()
	resp.Body.Close()
	if err != nil || !p.hasID {
		t.Fatalf("hang: %+v %v", p, err)
	}
	// Cancelled before its handler runs, the go-sdk server answers at
	// once (an error, its stream then resumable): cancel once hang runs.
	waitFor(t, func() bool { return strings.Contains(h.log.String(), "line=hanging") })
	cancel("8")
	hung, _, _ := strings.Cut(p.id, "-")
	s, _ := h.b.lookup(sid)
	// Its request timeout, now.
	s.mu.Lock()
	c := s.byClient["\x008"]
	if c == nil || !c.cancelled {
		s.mu.Unlock()
		t.Fatalf("the hung call: %+v", c)
	}
	c.timer.Reset(0)
	s.mu.Unlock()
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.pending[c.childKey] == nil && s.streams[hung] == nil
	})
	if s.isEnded() {
		t.Fatal("the session ended as hung for a cancelled request")
	}
	if got := toolCall(t, h, "alice", sid, "9", "incr"); !strings.Contains(got, `"structuredContent":{"text":"1"}`) {
		t.Fatalf("the session after: %s", got)
	}
}

// cutAnswer is a RoundTripper whose POST answers lose the event that
// holds a response to a tools/call: the bytes reach the client's end of
// the connection (the bridge wrote them), then the connection fails
// before the client reads them. It waits until the bridge has let go of
// the stream (its writer gone), as a connection that fails after the
// server's last write does.
type cutAnswer struct {
	h    *harness
	user string
	cut  chan string // the stream ID of each answer cut
}

func (c *cutAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(userHeader, c.user)
	var call bool
	if r.Method == http.MethodPost && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		call = strings.Contains(string(body), `"method":"tools/call"`)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !call {
		return resp, err
	}
	resp.Body = &cutBody{c: c, sid: r.Header.Get("Mcp-Session-Id"), rc: resp.Body, br: bufio.NewReader(resp.Body)}
	return resp, nil
}

// cutBody passes whole events until the one holding a response.
type cutBody struct {
	c      *cutAnswer
	sid    string
	rc     io.ReadCloser
	br     *bufio.Reader
	buf    []byte
	stream string
	err    error
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var ev []byte
		for {
			line, err := b.br.ReadString('\n')
			ev = append(ev, line...)
			if err != nil {
				b.err = err
				break
			}
			if line == "\n" {
				break
			}
		}
		if id, ok := strings.CutPrefix(string(ev), "id: "); ok && b.stream == "" {
			b.stream, _, _ = strings.Cut(id, "-")
		}
		if strings.Contains(string(ev), `"result":`) {
			// The bridge wrote the answer: wait until it is done with the
			// stream, then fail the connection before the client reads it.
			s, _ := b.c.h.b.lookup(b.sid)
			for range 1000 {
				if s == nil || !writerAttached(s, b.stream) {
					break
				}
				runtime.Gosched()
				time.Sleep(10 * time.Millisecond)
			}
			b.rc.Close()
			b.c.cut <- b.stream
			b.err = io.ErrUnexpectedEOF
			return 0, b.err
		}
		b.buf = ev
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *cutBody) Close() error { return b.rc.Close() }

// writerAttached reports whether stream id of s is kept with a reader.
func writerAttached(s *session, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	return st != nil && st.reader
}

// TestResumeDeliveredAnswer: an answer the bridge wrote on a connection
// that then failed before the client read it is not lost: the go-sdk
// client resumes the call's stream with GET and Last-Event-ID and gets
// the answer; the stream stays resumable for resume_window (a second
// resumption replays it again, then it ends), and the call ran once.
func TestResumeDeliveredAnswer(t *testing.T) {
	h := newHarness(t, Config{})
	cut := &cutAnswer{h: h, user: "alice", cut: make(chan string, 4)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: h.srv.URL, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: cut}}
	ctx := ctxT(t)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got, err := callText(ctx, cs, "incr")
	if err != nil || got != `{"text":"1"}` {
		t.Fatalf("incr through a connection cut after the answer: %q, %v; want 1", got, err)
	}
	stream := <-cut.cut
	sid := cs.ID()
	// Resumable again from its start, for resume_window: the answer, then
	// the end of the stream.
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", stream+"-0"))
	if len(evs) != 1 || evs[0].id != stream+"-1" || !strings.Contains(evs[0].data, `"structuredContent":{"text":"1"}`) {
		t.Fatalf("second resumption: %+v, want the answer alone", evs)
	}
	if got, err := callText(ctx, cs, "incr"); err != nil || got != `{"text":"2"}` {
		t.Fatalf("next incr: %q, %v; want 2 (the call ran once)", got, err)
	}
	// At the end of resume_window (brought forward), it is forgotten.
	s, _ := h.b.lookup(sid)
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.streams[stream]
		if st != nil && st.timer != nil {
			st.timer.Reset(0)
		}
		return st == nil
	})
	if status, body := resumeStatus(t, h, "alice", sid, stream+"-0"); status != http.StatusBadRequest || body != notResumable {
		t.Errorf("after resume_window: %d %s", status, body)
	}
}

// TestResumeDeliveredGoFirst: at the session's bound, answers written on
// a connection go first, the oldest first, whole: an answer whose client
// went before it came stays resumable, and so does the newest delivered.
func TestResumeDeliveredGoFirst(t *testing.T) {
	h := newHarness(t, Config{MaxQueued: 4})
	sid := rawSession(t, h, "alice")
	priming, _ := startWait(t, h, "alice", sid, "") // progress 1, 2, the answer: 3 events
	toolCall(t, h, "alice", sid, "6", "release")    // 1 event, delivered
	noInflight(t, h, sid)
	var delivered []string
	for i := range 3 {
		evs := events(t, send(t, http.MethodPost, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","id":`+itoaS(int64(10+i))+`,"method":"tools/call","params":{"name":"incr","arguments":{}}}`))
		if len(evs) != 2 || !strings.Contains(evs[1].data, `"result"`) {
			t.Fatalf("incr %d: %+v", i, evs)
		}
		delivered = append(delivered, evs[0].id)
	}
	if status, body := resumeStatus(t, h, "alice", sid, delivered[0]); status != http.StatusBadRequest || body != notResumable {
		t.Errorf("the oldest delivered answer: %d %s, want it gone", status, body)
	}
	if evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", delivered[2])); len(evs) != 1 || !strings.Contains(evs[0].data, `"text":"3"`) {
		t.Errorf("the newest delivered answer: %+v", evs)
	}
	evs := events(t, send(t, http.MethodGet, h.srv.URL, "alice", sid, "", "Last-Event-ID", priming))
	if len(evs) != 3 || !strings.Contains(evs[2].data, "released") {
		t.Errorf("the answer whose client went: %+v, want its 3 events", evs)
	}
}
