package middleware

import (
	"errors"
	"io"
	"net/http"
)

// errMethodNotAllowed: a method other than POST, GET and DELETE (405).
var errMethodNotAllowed = errors.New("middleware: method not allowed")

// errBodyNotAllowed: a GET or DELETE with a body (400).
var errBodyNotAllowed = errors.New("middleware: body not allowed")

// reasonMethodNotAllowed: errMethodNotAllowed (405, Allow: GET, POST, DELETE).
const reasonMethodNotAllowed Reason = "method_not_allowed"

// reasonBodyNotAllowed: errBodyNotAllowed (400).
const reasonBodyNotAllowed Reason = "body_not_allowed"

// allowedMethods is the Allow header of the 405, the methods of
// Streamable HTTP, as the go-sdk and the TypeScript SDK send it.
const allowedMethods = "GET, POST, DELETE"

// bodyMethodNotAllowed is the 405's body, the TypeScript SDK's.
const bodyMethodNotAllowed = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed."}}`

// checkMethod refuses what Streamable HTTP has no use for and a server
// might read differently from the middleware, which authorizes a request
// other than POST with the base scopes and never reads its body: a method
// other than POST, GET and DELETE (exactly, in upper case: a router
// matching "post" or "PUT" to its POST handler would run a body never
// authorized), and a GET or DELETE with a body (a server that does not
// read it may parse it as a request of its own). A chunked body of no
// bytes passes as none. It returns nil or errMethodNotAllowed or
// errBodyNotAllowed; r.Body is left unread.
func checkMethod(r *http.Request) error {
	switch r.Method {
	case http.MethodPost:
		return nil
	case http.MethodGet, http.MethodDelete:
	default:
		return errMethodNotAllowed
	}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength < 0 { // chunked (or HTTP/2 without a length): empty?
		var b [1]byte
		if n, err := io.ReadFull(r.Body, b[:]); n == 0 && err == io.EOF {
			r.Body, r.ContentLength = http.NoBody, 0
			return nil
		}
	}
	return errBodyNotAllowed
}

// refuseMethod answers checkMethod's refusal err, closing the connection
// when the body is left unread. It reports whether it refused.
func (m *Middleware) refuseMethod(w http.ResponseWriter, r *http.Request, p *Principal) bool {
	err := checkMethod(r)
	if err == nil {
		return false
	}
	if errors.Is(err, errMethodNotAllowed) {
		w.Header().Set("Allow", allowedMethods)
	}
	closeUnread(w, r) // the body, if any, is not read
	m.refuse(w, r, &refusal{err: err, p: p})
	return true
}
