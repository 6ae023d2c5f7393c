package middleware

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpguard/mcpguard/prm"
)

// published is the RFC 9728 metadata document the Middleware serves
// ([Middleware.MetadataHandler]). When Config.Metadata.ScopesSupported was
// nil (derived from the policy), the scopes of every [Middleware.Protect]
// and [Middleware.RequireScopes] route are added to its scopes_supported as
// the routes are built, so that a client sizing its registration from the
// document can obtain them; a given ScopesSupported is served unchanged.
type published struct {
	derived bool // scopes_supported is derived from the policy and the routes
	mu      sync.Mutex
	doc     prm.Metadata // guarded by mu
	h       atomic.Pointer[http.Handler]
}

func newPublished(doc prm.Metadata, derived bool) (*published, error) {
	h, err := prm.Handler(doc)
	if err != nil {
		return nil, err
	}
	p := &published{derived: derived, doc: doc}
	p.h.Store(&h)
	return p, nil
}

func (p *published) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*p.h.Load()).ServeHTTP(w, r)
}

// addScopes adds a route's scopes (already checked by checkScopes) to
// scopes_supported, if it is derived, never offline_access.
func (p *published) addScopes(scopes []string) {
	if !p.derived {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	merged := appendUnique(slices.Clone(p.doc.ScopesSupported), scopes...)
	merged = slices.DeleteFunc(merged, func(s string) bool { return s == "offline_access" })
	if len(merged) == len(p.doc.ScopesSupported) {
		return
	}
	doc := p.doc
	doc.ScopesSupported = merged
	h, err := prm.Handler(doc)
	if err != nil {
		// Unreachable: the document was valid and the scopes are valid
		// scope tokens. Keep serving the previous document.
		return
	}
	p.doc = doc
	p.h.Store(&h)
}
