package devas

import "net/http"

// Browser-based MCP clients (MCP Inspector's web UI, single-page apps) run
// discovery, registration and the token request from the page, so those
// endpoints answer cross-origin (the Fetch standard's CORS protocol): any
// origin, no credentials (none of them reads a cookie), and a preflight
// OPTIONS answered 204 for the request headers such clients send
// (MCP-Protocol-Version on discovery; Content-Type, Authorization and DPoP
// on the token and registration endpoints). The authorization endpoint,
// whose consent page relies on a cookie, is a top-level navigation and
// answers no CORS.
const (
	corsMaxAge      = "600"
	corsExpose      = "DPoP-Nonce, WWW-Authenticate"
	corsReadHeaders = "MCP-Protocol-Version"
	corsAPIHeaders  = "Authorization, Content-Type, DPoP, MCP-Protocol-Version"
)

// withCORS serves h cross-origin: methods are the ones the endpoint
// accepts, headers the request headers a preflight may ask for.
func withCORS(methods, headers string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Access-Control-Allow-Origin", "*")
		hdr.Set("Access-Control-Expose-Headers", corsExpose)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hdr.Set("Access-Control-Allow-Methods", methods)
			hdr.Set("Access-Control-Allow-Headers", headers)
			hdr.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h(w, r)
	}
}
