package stdiobridge

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestChildRequestDuringInitialize: a child that sends a request before
// it answers initialize (MCP lets a server ping then) and waits for the
// answer gets one from the bridge, as no client can receive a request
// then (initialize is answered as JSON, and a stateless or shared child
// is initialized by the bridge): ping an empty result, any other
// -32601. Its initialize is then answered, in a session of its own, with
// per_user and for a stateless client. (The bridge put such a request on
// the initialize's stream, which nobody reads: the child waited until
// start_timeout.)
func TestChildRequestDuringInitialize(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jsonrpc":"2.0","id":"early0","result":{}} {"jsonrpc":"2.0","id":"early1","error":{"code":-32601,"message":"Method not found"}}`
	for _, tc := range []struct {
		name      string
		perUser   bool
		stateless bool
	}{{"session", false, false}, {"per_user", true, false}, {"stateless", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Command: []string{exe, "ping", "sampling/createMessage"}, Env: map[string]string{seqEnv: "1"},
				PerUser: tc.perUser, StartTimeout: 20 * time.Second})
			if tc.stateless {
				resp, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", modernBody("1", "tools/call", `"name":"early","arguments":{},`))
				if got := bodyText(body); resp.StatusCode != http.StatusOK || got != want {
					t.Fatalf("stateless call: %d %s, want the text %s", resp.StatusCode, body, want)
				}
				return
			}
			a := post(t, h, "alice", "", initBody)
			sid := a.header.Get("Mcp-Session-Id")
			if a.status != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d %v", a.status, a.msgs)
			}
			if got := tool(t, h, "alice", sid, "early", "").text(); got != want {
				t.Fatalf("the child's early requests got %s, want %s", got, want)
			}
		})
	}
}

// bodyText is answer.text of a body: an SSE stream's last data, or JSON.
func bodyText(body string) string {
	a := answer{msgs: []string{body}}
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && d != "" {
			a.msgs = append(a.msgs, d)
		}
	}
	return a.text()
}
