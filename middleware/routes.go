package middleware

import "net/http"

// Protect returns a middleware for ordinary HTTP routes beside the MCP
// endpoint (REST, webhooks, admin pages): the same tokens, challenges,
// step-up bound and Config.OnDecision as [Middleware.Handler], but the
// request is never read as JSON-RPC. The body is not touched, so forms,
// uploads and empty bodies reach next unchanged, and the operation policy
// does not apply. Checks run in this order: Origin (403), bearer token
// (401 or 400), token validation (401; 503 when keys are unavailable),
// then the base scopes (Config.Scopes) plus scopes (403
// insufficient_scope, listing all of them). next receives the request with
// the [Principal] in its context. Public operations never apply: a request
// without a token always gets 401. Routes that need no token (health
// checks, the metadata) are simply not wrapped.
//
// It works as a gorilla/mux middleware (sub.Use(m.Protect("admin"))) and
// around http.ServeMux handlers (mux.Handle("POST /hooks/{id}",
// m.Protect("hooks")(h))). It panics if a scope is not an RFC 6749 §3.3
// scope token or is offline_access, as [Middleware.RequireScopes] does.
// [Middleware.RequireScopes] may be stacked behind it for finer routes.
// Its scopes are added to the published scopes_supported when that is
// derived (Config.Metadata.ScopesSupported nil), as RequireScopes' are.
func (m *Middleware) Protect(scopes ...string) func(http.Handler) http.Handler {
	if err := checkScopes("Protect", scopes); err != nil {
		panic(err.Error())
	}
	g := &grant{op: m.newOperation(m.policy.base.scopes, scopes)}
	m.metadata.addScopes(scopes) // published.go
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("middleware: Protect(…)(nil)")
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Header["Origin"]; ok && m.origins.cors(w, r) {
				return // a CORS preflight of an allowed origin (origin.go)
			}
			p, err := m.authenticate(r)
			if err != nil {
				closeUnread(w, r) // Protect never reads the body
				m.refuse(w, r, &refusal{err: err})
				return
			}
			setNextNonce(w, p)
			op := g.op
			if missing := m.missing(p.Scopes, op.scopes); missing != nil {
				closeUnread(w, r)
				m.insufficient(w, r, &refusal{p: p, g: g}, op, missing)
				return
			}
			p.grant = g
			r2 := withPrincipal(r, p)
			m.reportPass(r2.Context(), r.Header, p, nil)
			next.ServeHTTP(w, r2)
		})
	}
}
