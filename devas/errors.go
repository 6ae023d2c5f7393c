package devas

import "errors"

// The sentinel error returned by [New]. Errors from
// the HTTP endpoints are never returned to Go callers: they become OAuth
// error responses (RFC 6749 §4.1.2.1, §5.2) and log records. The text is
// part of the API.
var (
	// ErrConfig: the Config passed to [New] is invalid.
	ErrConfig = errors.New("devas: invalid config")
)
