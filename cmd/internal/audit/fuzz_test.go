package audit

import "testing"

// FuzzReadRPC: the response reader takes any body, JSON or event stream,
// without panicking, and never returns more than 64 events' worth.
func FuzzReadRPC(f *testing.F) {
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`))
	f.Add("text/event-stream", []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add("text/event-stream", []byte("data: a\ndata: b\n\ndata:\n\n: comment\n"))
	f.Add("text/event-stream; charset=utf-8", []byte("data: {\"id\":1,\"id\":2}\n\n"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		_ = readRPC(ct, body)
		if n := len(sseData(body)); n > 64 {
			t.Fatalf("%d events, want at most 64", n)
		}
		_ = unverifiedClaims(string(body))
		_ = leakIn(string(body))
	})
}
