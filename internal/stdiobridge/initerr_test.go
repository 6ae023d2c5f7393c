package stdiobridge

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestInitializeRefused: a child that answers initialize with an error
// (an unsupported protocol version) starts no session: its client gets
// that error as the child sent it, without Mcp-Session-Id (Streamable
// HTTP gives one with an InitializeResult), and the child is stopped,
// holding none of the user's max_per_user. (The bridge gave a session
// id and kept the child until idle_timeout.)
func TestInitializeRefused(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Command: []string{exe, "refuse"}, Env: map[string]string{seqEnv: "1"}, MaxPerUser: 1})
	for round := range 3 {
		a := post(t, h, "alice", "", initBody)
		if a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") != "" || !strings.Contains(a.last(), `"error":{"code":-32602,"message":"Unsupported protocol version"`) {
			t.Fatalf("round %d: initialize refused by the child: %d session %q %v, want 200, its error, no session", round, a.status, a.header.Get("Mcp-Session-Id"), a.msgs)
		}
		waitFor(t, func() bool { return h.b.Children() == 0 })
	}
}
