package stdiobridge

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
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
