package middleware

import (
	"net/http"
	"time"
)

// closeUnread prepares a refusal decided before r's body was read: the
// connection is closed after the answer instead of being kept alive.
// Otherwise net/http drains up to 256 KiB of the unread body before it
// writes the answer (and again before reusing the connection), so a client
// without a token could hold the connection and its goroutine for as long
// as it trickles a body. It sets "Connection: close" (HTTP/1.x; for
// HTTP/2 the stream is what ends) and a read deadline of now, so that
// nothing more of the body is read. A request without a body is left
// alone: there is nothing to trickle, and the connection stays reusable;
// so is one whose body Handler already read (RequireScopes behind it).
//
// Every refusal sent before the body is read calls it: Handler's (the
// token, the origin, the base scopes, a GET or DELETE refused by the
// session binding, a public operation's path), Protect's, RequireScopes',
// Challenge's, and the CORS preflight.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	if _, read := r.Body.(*bodyReader); read {
		return
	}
	if r.ProtoMajor < 2 {
		w.Header().Set("Connection", "close")
	}
	// ErrNotSupported (a recorder, a wrapper without Unwrap) leaves only
	// Connection: close, which is enough for HTTP/1.x servers.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
