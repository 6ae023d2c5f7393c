package server

import (
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
)

// StreamWriteTimeout is how long the answer to one authorized request may
// take to write, streams included. The HTTP server's own WriteTimeout (see
// the mcpserver command) is short, to bound refusals and slow readers
// without a token; an authorized answer may stream (an SSE response to a
// long tool call, or a GET event stream if the handler serves one), so
// liftDeadlines replaces it with this. A stream cut after it is resumed
// by the client (MCP Streamable HTTP §Resumability and Redelivery).
const StreamWriteTimeout = 10 * time.Minute

// liftDeadlines runs behind the middleware. For a request of an
// authenticated principal it clears the connection's read deadline,
// because the middleware has read the whole body already and net/http
// cancels the request's context when a read deadline passes during a long
// handler, and extends the write deadline to StreamWriteTimeout. Requests
// without a valid token never get here, and anonymous callers of public
// operations keep the server's short timeouts. Behind a server without
// deadlines (httptest) it changes nothing that matters.
func liftDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := middleware.PrincipalFromContext(r.Context()); !ok || p.Anonymous {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
		next.ServeHTTP(w, r)
	})
}
