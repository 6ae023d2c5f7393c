package stdiobridge

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBusyChildNotHung: a sequential child (seqMain) that serves a call
// for longer than ten seconds reads nothing meanwhile, so a request sent
// then, larger than the pipe's buffer, waits to be written. The child is
// not hung before request_timeout: both calls are answered and the
// session goes on. (The bridge bounded one write to stdin to a fixed
// 10 s and ended such a child as "stdin not writable".)
func TestBusyChildNotHung(t *testing.T) {
	h := newHarness(t, Config{Env: map[string]string{seqEnv: "1"}, RequestTimeout: DefaultRequestTimeout})
	sid := open(t, h, "alice")
	busy := rawPost(t, h.srv.URL, "alice", sid, toolBody("1", "busy", `{"ms":11000}`))
	// Its SSE header went out: the call is written, the child busy.
	if busy.StatusCode != http.StatusOK {
		t.Fatalf("busy: %d", busy.StatusCode)
	}
	pad := strings.Repeat("p", 1<<20)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"size","arguments":{"pad":"` + pad + `"}}}`
	big := post(t, h, "alice", sid, body)
	if got, want := big.text(), strconv.Itoa(len(body)+1); got != want {
		t.Fatalf("a call written while the child was busy: %d %.200v, want its size %s", big.status, big.msgs, want)
	}
	if a := readAnswer(t, busy); a.text() != "slept" {
		t.Fatalf("the busy call: %.200v, want slept", a.msgs)
	}
	if a := tool(t, h, "alice", sid, "size", ""); a.text() == "" {
		t.Fatalf("the session after: %d %v", a.status, a.msgs)
	}
	if strings.Contains(h.log.String(), "child ended") {
		t.Fatalf("the child was ended:\n%s", h.log.String())
	}
}

// TestForwardBounded: a client's notifications and answers that wait
// to be written to a child reading nothing are at most max_queued per
// session (each holds its body until the child reads or request_timeout):
// the next gets 503 with Retry-After.
func TestForwardBounded(t *testing.T) {
	h := newHarness(t, Config{Env: map[string]string{seqEnv: "1"}, MaxQueued: 2, StopGrace: 100 * time.Millisecond})
	sid := open(t, h, "alice")
	busy := rawPost(t, h.srv.URL, "alice", sid, toolBody("1", "busy", `{"ms":600000}`))
	defer busy.Body.Close()
	s, _ := h.b.lookup(sid)
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"` + strings.Repeat("p", 1<<20) + `"}}`
	done := make(chan int, 2)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(note))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(userHeader, "alice")
		req.Header.Set("Mcp-Session-Id", sid)
		go func() { // no t.Fatal off the test's goroutine
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.writing == 2
	})
	resp := rawPost(t, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfter {
		t.Fatalf("a third notification while two wait: %d Retry-After %q, want 503 %q", resp.StatusCode, resp.Header.Get("Retry-After"), retryAfter)
	}
	s.end("test over")
	for range 2 {
		<-done
	}
}
