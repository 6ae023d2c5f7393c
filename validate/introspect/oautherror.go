package introspect

import (
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Error codes of an RFC 6749 §5.2 error response that blame this resource
// server's own client authentication, not the token: every token would be
// refused the same way, so they are a misconfiguration (503 and an Error
// log line), never a 401 for the caller.
const (
	codeInvalidClient      = "invalid_client"      // RFC 6749 §5.2: client authentication failed
	codeUnauthorizedClient = "unauthorized_client" // RFC 6749 §5.2: this client may not use the endpoint
)

// maxErrorCode bounds the error code kept for logs.
const maxErrorCode = 64

// oauthErrorCode returns the "error" member of body, an RFC 6749 §5.2
// error response read with the project's strict JSON reader
// (internal/strictjson: unique member names, valid UTF-8, no case variant
// of "error" nor two names equal under case folding), or "" if body is
// not such a document or the code is empty, longer than 64 bytes or has a
// character outside 1*( %x20-21 / %x23-5B / %x5D-7E ). It is an unauthenticated answer
// about an attacker-chosen token, so its value only selects a branch and
// a bounded log field.
func oauthErrorCode(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	var code string
	var found bool
	err := strictjson.Members(body, []string{"error"}, func(name, value []byte) error {
		if string(name) == "error" {
			code, found = strictjson.String(value)
		}
		return nil
	})
	if err != nil || !found {
		return ""
	}
	if code == "" || len(code) > maxErrorCode {
		return ""
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return ""
		}
	}
	return code
}
