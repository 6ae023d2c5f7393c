package stdiobridge

import (
	"net/http"
	"strings"
	"testing"
)

// TestFitEvent: with MaxEventBytes, a response whose SSE event could
// exceed it reaches the client as -32603 "Response too large" (the
// reader in front would remove the event, and the client get no
// answer), in a session (a resumable stream) and for a stateless
// request; at the bound exactly it passes; a JSON answer is not bounded;
// the session goes on.
func TestFitEvent(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"big","arguments":{"n":1000}}}`
	// The answer's size, unbounded.
	h := newHarness(t, Config{})
	sid := open(t, h, "alice")
	a := post(t, h, "alice", sid, call)
	if !strings.Contains(a.last(), `"result"`) {
		t.Fatalf("unbounded: %v", a.msgs)
	}
	size := len(a.last())
	const tooLarge = `{"jsonrpc":"2.0","id":"b","error":{"code":-32603,"message":"Response too large"}}`
	for _, tc := range []struct {
		name  string
		bound int
		want  string // "" is the answer itself
	}{
		{"at the bound", size + maxEventOverhead, ""},
		{"a byte over", size + maxEventOverhead - 1, tooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{MaxEventBytes: tc.bound})
			sid := open(t, h, "alice")
			a := post(t, h, "alice", sid, call)
			if got := a.last(); tc.want == "" && len(got) != size || tc.want != "" && got != tc.want {
				t.Fatalf("session, SSE: %d %.100s (%d bytes), want %.100s", a.status, got, len(got), tc.want)
			}
			resp := rawPostAccept(t, h.srv.URL, "alice", sid, "application/json", call)
			if j := readAnswer(t, resp); len(j.last()) != size {
				t.Fatalf("session, JSON: %d %.100s, want the whole answer", j.status, j.last())
			}
			if a := tool(t, h, "alice", sid, "incr", ""); !strings.Contains(a.last(), `"result"`) {
				t.Fatalf("the session after: %v", a.msgs)
			}
			// Stateless: the answer gets resultType, so it is larger; a
			// bound below it replaces it.
			if tc.want != "" {
				_, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", modernBody(`"b"`, "tools/call", `"name":"big","arguments":{"n":1000},`))
				if !strings.Contains(body, tooLarge) {
					t.Fatalf("stateless: %.200s, want %s", body, tooLarge)
				}
			}
		})
	}
}

// rawPostAccept is rawPost with the Accept header given.
func rawPostAccept(t *testing.T, url, user, sid, accept, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set(userHeader, user)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
