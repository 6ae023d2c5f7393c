package proxy

import "net/http"

// Serves reports whether px answers r itself: r's path is one of its
// routes, their protected-resource metadata, the JWK Set of its
// assertions, /healthz or /readyz. A server that mounts a Proxy beside
// other handlers (the Caddy module, caddy/ in the repository) passes the
// other requests on instead of px's 404; [Proxy.ServeHTTP] answers these
// exactly as mcpguard proxy does.
func (px *Proxy) Serves(r *http.Request) bool {
	_, pattern := px.mux.Handler(r)
	return pattern != "/"
}
