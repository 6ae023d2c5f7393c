package stdiobridge

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkToolsCall: one tools/call through the bridge (HTTP in
// front, the go-sdk test server behind) answered as an SSE stream, one
// call at a time in one session: the bridge's per-call cost beside the
// child's.
func BenchmarkToolsCall(b *testing.B) {
	h := newHarness(b, Config{})
	resp := rawPost(b, h.srv.URL, "alice", "", initBody)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = rawPost(b, h.srv.URL, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"incr","arguments":{}}}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set(userHeader, "alice")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"result"`) {
			b.Fatalf("answer %d %s", resp.StatusCode, body)
		}
	}
}
