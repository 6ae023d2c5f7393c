package middleware

import (
	"errors"
	"net/http"
	"testing"
)

func TestDecodeHeaderValue(t *testing.T) {
	// Vectors from MCP 2026-07-28 streamable-http §Value Encoding
	// (spec-auth.md §5.8).
	tests := []struct {
		header, want string
		ok           bool
	}{
		{"us-west1", "us-west1", true},
		{"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", true},
		{"=?base64?IHBhZGRlZCA=?=", " padded ", true},
		{"=?base64?bGluZTEKbGluZTI=?=", "line1\nline2", true},
		{"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?=", true},
		{"=?base64?SGVsbG8sIOS4lueVjA?=", "Hello, 世界", true}, // unpadded
		{"=?base64??=", "", true},
		{"=?BASE64?SGk=?=", "=?BASE64?SGk=?=", true}, // markers are case-sensitive: a plain value
		{"=?base64?not base64?=", "", false},
		{"=?base64?literal?=", "\x96+^\xad\xa9", true}, // decodes, so it can never equal the literal body value
		{"caf\xc3\xa9", "", false},                     // raw non-ASCII must be encoded
		{"a\x00b", "", false},
		{"with space\tand tab", "with space\tand tab", true},
	}
	for _, tt := range tests {
		got, ok := decodeHeaderValue(tt.header)
		if ok != tt.ok || got != tt.want {
			t.Errorf("decodeHeaderValue(%q) = %q, %t; want %q, %t", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckHeaders(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather",` + meta + `}}`
	read := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects/myapp/config.json",` + meta + `}}`
	prompt := `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":" padded ",` + meta + `}}`
	notif := `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`
	legacy := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather"}}`
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	v, m, n := "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"
	tests := []struct {
		name    string
		body    string
		header  http.Header
		wantErr error
	}{
		{"modern ok", call, h(v, modernRev, m, "tools/call", n, "get_weather"), nil},
		{"modern resources/read ok", read, h(v, modernRev, m, "resources/read", n, "file:///projects/myapp/config.json"), nil},
		{"modern base64 name ok", prompt, h(v, modernRev, m, "prompts/get", n, "=?base64?IHBhZGRlZCA=?="), nil},
		{"modern plain padded name mismatch", prompt, h(v, modernRev, m, "prompts/get", n, "padded"), errHeaderMismatch},
		{"modern method missing", call, h(v, modernRev, n, "get_weather"), errHeaderMismatch},
		{"modern name missing", call, h(v, modernRev, m, "tools/call"), errHeaderMismatch},
		{"modern method case", call, h(v, modernRev, m, "Tools/Call", n, "get_weather"), errHeaderMismatch},
		{"modern name case", call, h(v, modernRev, m, "tools/call", n, "GET_WEATHER"), errHeaderMismatch},
		{"modern body version missing", legacy, h(v, modernRev, m, "tools/call", n, "get_weather"), errMissingMeta},
		{"later revision is modern", legacy, h(v, "2027-01-01", m, "tools/call", n, "get_weather"), errMissingMeta},
		{"version header differs from meta", call, h(v, "2025-11-25", m, "tools/call", n, "get_weather"), errHeaderMismatch},
		{"version header missing with meta", call, h(m, "tools/call", n, "get_weather"), errHeaderMismatch},
		{"version repeated", call, h(v, modernRev, v, modernRev, m, "tools/call", n, "get_weather"), errHeaderMismatch},
		{"name repeated", call, h(v, modernRev, m, "tools/call", n, "get_weather", n, "get_weather"), errHeaderMismatch},
		{"method header on response", `{"jsonrpc":"2.0","id":1,"result":{}}`, h(v, modernRev, m, "tools/call"), errHeaderMismatch},
		{"modern notification needs no headers", `{"jsonrpc":"2.0","method":"notifications/progress","params":{` + meta + `}}`, h(v, modernRev), nil},
		{"modern notification method checked", notif, h(v, modernRev, m, "notifications/other"), errHeaderMismatch},
		{"modern response ok", `{"jsonrpc":"2.0","id":1,"result":{}}`, h(v, modernRev), nil},
		{"legacy needs no headers", legacy, h(v, legacyRev), nil},
		{"unversioned needs no headers", legacy, h(), nil},
		{"legacy present method checked", legacy, h(v, legacyRev, m, "tools/list"), errHeaderMismatch},
		{"legacy present name checked", legacy, h(v, legacyRev, n, "delete_repo"), errHeaderMismatch},
		{"name ignored for other methods", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, h(v, modernRev, m, "tools/list", n, "anything"), nil},
		{"name header but no name in body", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `}}`, h(v, modernRev, m, "tools/call", n, "x"), errHeaderMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msg message
			if err := parseMessage([]byte(tt.body), &msg); err != nil {
				t.Fatalf("parseMessage: %v", err)
			}
			err := checkHeaders(tt.header, &msg)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("checkHeaders() error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
