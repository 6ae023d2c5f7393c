package stdiobridge

import (
	"testing"
)

// TestAttackChildRequestIDsBounded: the ids of a child's requests
// waiting for the client's answer are kept within the session's byte
// bound (4 × max_message_bytes), not only max_queued of them: a hostile
// child sending requests with ids near max_message_bytes would otherwise
// hold max_queued × max_message_bytes per session (a GiB at the
// defaults), beyond the proxy-wide worst case docs/proxy.md states.
// A request beyond the bound is dropped and logged.
func TestAttackChildRequestIDsBounded(t *testing.T) {
	const maxMsg = 64 << 10
	h := newHarness(t, Config{Env: map[string]string{seqEnv: "1"}, MaxMessageBytes: maxMsg})
	sid := open(t, h, "alice")
	if a := tool(t, h, "alice", sid, "bigids", `{"n":100,"size":60000}`); a.text() != "sent" {
		t.Fatalf("bigids: %d %.200v", a.status, a.msgs)
	}
	s, _ := h.b.lookup(sid)
	s.mu.Lock()
	n, bytes := len(s.serverReqs), 0
	for id := range s.serverReqs {
		bytes += len(id)
	}
	s.mu.Unlock()
	if bound := resumeBytes(maxMsg); bytes > bound {
		t.Fatalf("%d requests of the child waiting for the client hold %d bytes of ids, want at most %d", n, bytes, bound)
	}
}
