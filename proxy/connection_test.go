package proxy_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestConnectionCannotHideDecidedHeaders: a client cannot make the proxy
// drop, as hop-by-hop, a header the middleware decided on: with
// "Connection: Mcp-Session-Id", an initialize in the client's own bound
// session reached the upstream without it, so the upstream created a
// session the binding never saw, past sessions.per_principal (and its
// eviction, which closes the least recently used one): one token could
// open any number of sessions on the upstream.
func TestConnectionCannotHideDecidedHeaders(t *testing.T) {
	var mu sync.Mutex
	created := map[string]bool{}
	e := newTestEnv(t, envOptions{
		route: func(r *proxy.Route) { r.Sessions.PerPrincipal = 2 },
		upstream: func(t *testing.T, jwksURL, issuer, audience string) http.Handler {
			h := goSDKUpstream(t, jwksURL, issuer, audience, false)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r)
				if sid := w.Header().Get("Mcp-Session-Id"); sid != "" && r.Header.Get("Mcp-Session-Id") == "" {
					mu.Lock()
					created[sid] = true
					mu.Unlock()
				}
			})
		},
	})
	auth := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	resp := do(t, "POST", e.resource, init, auth)
	readAll(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize = %d, session %q", resp.StatusCode, sid)
	}
	for range 6 {
		h := auth.Clone()
		h.Set("Mcp-Session-Id", sid)
		h.Set("Connection", "Mcp-Session-Id, Mcp-Protocol-Version")
		h.Set("Mcp-Protocol-Version", "2025-11-25")
		resp := do(t, "POST", e.resource, init, h)
		body := readAll(t, resp)
		if got := resp.Header.Get("Mcp-Session-Id"); got != "" && got != sid {
			t.Errorf("initialize in session %s answered %d with another session %s (%s)", sid, resp.StatusCode, got, strings.TrimSpace(body))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(created) > 2 {
		t.Errorf("the upstream created %d sessions for one principal, past sessions.per_principal 2", len(created))
	}
}
