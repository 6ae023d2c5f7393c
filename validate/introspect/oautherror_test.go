package introspect

import (
	"strings"
	"testing"
)

func TestOAuthErrorCode(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error":"invalid_client"}`, "invalid_client"},
		{`{"error":"invalid_request","error_description":"x","error_uri":"https://e"}`, "invalid_request"},
		{` {"error" : "unsupported_token_type"} `, "unsupported_token_type"},
		{`{"error":"invalid_request","error":"invalid_client"}`, ""}, // duplicate names
		{`{"ERROR":"invalid_client"}`, ""},                           // case variant
		{`{"Error":"invalid_client"}`, ""},
		{`{"ERROR":"invalid_request","error":"invalid_client"}`, ""}, // a case variant beside the name read
		{`{"error":"invalid_client","x":1,"X":2}`, ""},               // two names equal under folding
		{`{"error":"invalid_client","x":{"a":1,"a":2}}`, ""},         // repeated in a nested object
		{`{"error":"invalid_client","x":"\ud800"}`, ""},              // lone surrogate elsewhere
		{`{"error":1}`, ""},
		{`{"error":""}`, ""},
		{`{"error":"a\"b"}`, ""},
		{`{"error":"a\\b"}`, ""},
		{`{"error":"tab\there"}`, ""},
		{`{"error":"caf\u00e9"}`, ""},
		{`{"error":"` + strings.Repeat("a", 65) + `"}`, ""},
		{"{\"error\":\"invalid_client\xff\"}", ""},
		{`{"error":"invalid_client"} trailing`, ""},
		{`["invalid_client"]`, ""},
		{`null`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := oauthErrorCode([]byte(tt.body)); got != tt.want {
			t.Errorf("oauthErrorCode(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// FuzzOAuthErrorCode: any body yields "" or a code in the RFC 6749 §5.2
// charset of at most 64 bytes, never a panic.
func FuzzOAuthErrorCode(f *testing.F) {
	for _, s := range []string{`{"error":"invalid_client"}`, `{"error":"invalid_request","error":"x"}`, `{"ERROR":"x"}`, `{"error":"\u0000"}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := oauthErrorCode(body)
		if len(c) > maxErrorCode {
			t.Fatalf("code of %d bytes", len(c))
		}
		for i := 0; i < len(c); i++ {
			if b := c[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
				t.Fatalf("code %q has byte %#x", c, b)
			}
		}
	})
}
