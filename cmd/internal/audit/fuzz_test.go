package audit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

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

// FuzzPrintable: whatever a server sends, the rendered text is valid UTF-8
// with no control or format character, printable text is left as it is,
// and cut never splits a rune.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{
		"", "plain text → ok…", "\x1b]0;pwned\a\x1b[2J", "\u009b2J", "\u202eevil\u2066x\u2069",
		"a\u200bb\ufeff", "line\u2028sep", "\xff\xfe", "caf\xc3", "\U000e0041 tag", "tab\tnl\n\r\x00\x7f",
	} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		p := printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("printable(%q) = %q: invalid UTF-8", s, p)
		}
		if i := strings.IndexFunc(p, unsafeRune); i >= 0 {
			t.Fatalf("printable(%q) = %q: unsafe rune at %d", s, p, i)
		}
		if utf8.ValidString(s) && strings.IndexFunc(s, unsafeRune) < 0 && p != s {
			t.Fatalf("printable(%q) = %q: changed printable text", s, p)
		}
		if n < 0 || n > len(p) {
			return
		}
		c := cut(p, n)
		if !utf8.ValidString(c) || len(c) > n+len("…") {
			t.Fatalf("cut(%q, %d) = %q", p, n, c)
		}
	})
}
