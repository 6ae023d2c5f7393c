package introspect

import (
	"github.com/go-json-experiment/json"
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
// error response read with the project's strict JSON reader (unique member
// names, valid UTF-8, exact case), or "" if body is not such a document or
// the code is empty, longer than 64 bytes or has a character outside
// 1*( %x20-21 / %x23-5B / %x5D-7E ). It is an unauthenticated answer
// about an attacker-chosen token, so its value only selects a branch and
// a bounded log field.
func oauthErrorCode(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	var doc struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return ""
	}
	if doc.Error == "" || len(doc.Error) > maxErrorCode {
		return ""
	}
	for i := 0; i < len(doc.Error); i++ {
		if c := doc.Error[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return ""
		}
	}
	return doc.Error
}
