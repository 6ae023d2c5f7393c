package stdiobridge

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// notes returns the data of the notifications/message in msgs.
func notes(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		if strings.Contains(m, `"method":"notifications/message"`) {
			_, d, _ := strings.Cut(m, `"data":"`)
			d, _, _ = strings.Cut(d, `"`)
			out = append(out, d)
		}
	}
	return out
}

// TestNotificationEachSession: per_user: a notification of the child
// that is tied to no request reaches each client session of the child
// once, on that session's own streams (its GET stream; else its own
// call in flight; else it waits for its next GET stream), never on a
// call of another session.
func TestNotificationEachSession(t *testing.T) {
	h := newHostile(t, Config{PerUser: true}, nil)
	a, b, c := open(t, h, "alice"), open(t, h, "alice"), open(t, h, "alice")
	// a has a call in flight and no GET stream; b has the flood call; c
	// has nothing open.
	waitA := inflight(t, h, "alice", a, "5")
	waitFor(t, func() bool { return pendingCalls(h, a) == 1 })
	fb := tool(t, h, "alice", b, "flood", `{"n":1,"size":1}`)
	if got := notes(fb.msgs); fb.text() != "flooded" || strings.Join(got, ",") != "f0" {
		t.Errorf("b's call: %q, notes %q; want flooded after its copy f0", fb.text(), got)
	}
	tool(t, h, "alice", b, "release", "")
	if aa := <-waitA; aa.text() != "released" || strings.Join(notes(aa.msgs), ",") != "f0" {
		t.Errorf("a's call: %q, notes %q; want released after its copy f0", aa.text(), notes(aa.msgs))
	}
	// c's copy waited for its GET stream: it comes before a later one.
	get := openGET(t, h, "alice", c)
	defer get.Body.Close()
	if fb := tool(t, h, "alice", b, "flood", `{"n":1,"size":2}`); strings.Join(notes(fb.msgs), ",") != "ff0" {
		t.Errorf("b's second call: notes %q, want ff0", notes(fb.msgs))
	}
	r := sseReader{bufio.NewReader(get.Body)}
	for _, want := range []string{"f0", "ff0"} {
		ev, err := r.next()
		if got := notes([]string{ev.data}); err != nil || strings.Join(got, ",") != want {
			t.Fatalf("c's GET stream: %q (%v), want %s: f0 waited for it, then ff0", got, err, want)
		}
	}
	resp := send(t, http.MethodDelete, h.srv.URL, "alice", c, "")
	resp.Body.Close()
}

// TestSlowReaderCut: a client connected to its GET stream that does not
// keep up while the child floods does not silently miss messages: when
// the session's bound drops an event the connection has not had, the
// connection ends there (what it got has no gap), a resumption from its
// last event is refused (400: it cannot be resumed without the gap), the
// session goes on and a new GET stream gets what comes next.
func TestSlowReaderCut(t *testing.T) {
	h := newHostile(t, Config{}, nil)
	sid := open(t, h, "alice")
	get := send(t, http.MethodGet, h.srv.URL, "alice", sid, "")
	defer get.Body.Close()
	r := sseReader{bufio.NewReader(get.Body)}
	// One event read, then the client stops reading while the child
	// sends more than TCP and the session's bound together hold.
	if a := tool(t, h, "alice", sid, "flood", `{"n":1,"after":true}`); a.text() != "flooding" {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	first, err := r.next()
	if err != nil {
		t.Fatalf("first GET event: %v", err)
	}
	stream, last, _ := parseEventID(first.id)
	if a := tool(t, h, "alice", sid, "flood", `{"n":40000,"size":900,"after":true}`); a.text() != "flooding" {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	waitFor(t, func() bool {
		return strings.Contains(h.log.String(), "child messages dropped: over the session's stream buffer bound")
	})
	// Read what the connection got: consecutive IDs, then its end.
	for {
		ev, err := r.next()
		if err != nil {
			break
		}
		id, seq, perr := parseEventID(ev.id)
		if perr != nil || id != stream || seq != last+1 {
			t.Fatalf("GET event %q after %s-%d: a gap the client was not told of", ev.id, stream, last)
		}
		stream, last = id, seq
	}
	if status, body := resumeStatus(t, h, "alice", sid, stream+"-"+itoaS(last)); status != http.StatusBadRequest || body != notResumable {
		t.Errorf("resuming past the gap: %d %s, want 400", status, body)
	}
	if !strings.Contains(h.log.String(), "stdio: a client did not keep up: its stream ends at the messages lost") {
		t.Errorf("the cut is not logged:\n%.2000s", h.log.String())
	}
	// Once the flood is over (its second answer is dropped), the session
	// serves calls, and a new GET stream gets what comes next.
	waitFor(t, func() bool { return strings.Count(h.log.String(), "child answer to no request in flight dropped") == 2 })
	if a := tool(t, h, "alice", sid, "pid", ""); a.status != http.StatusOK || a.text() == "" {
		t.Fatalf("the session after: %d %v", a.status, a.msgs)
	}
	again := send(t, http.MethodGet, h.srv.URL, "alice", sid, "")
	defer again.Body.Close()
	if a := tool(t, h, "alice", sid, "flood", `{"n":1,"size":3,"after":true}`); a.text() != "flooding" {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	r = sseReader{bufio.NewReader(again.Body)}
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("new GET stream: %v before the new notification", err)
		}
		if strings.Contains(ev.data, `"data":"fff0"`) {
			break
		}
	}
}

// TestTransportCut: through the in-process transport (the proxy's way
// to the bridge), a write deadline that has passed ends the answer: the
// write fails and its reader gets the cut, as on a connection.
func TestTransportCut(t *testing.T) {
	written := make(chan error, 1)
	tr := handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("a"))
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now()); err != nil {
			written <- err
			return
		}
		_, err := w.Write([]byte("b"))
		written <- err
	})}
	req, _ := http.NewRequest(http.MethodGet, "http://bridge/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if string(body) != "a" || !errors.Is(err, errCut) {
		t.Errorf("the reader got %q, %v; want a, then the cut", body, err)
	}
	if err := <-written; !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("the write after the deadline: %v, want it to fail", err)
	}
}
