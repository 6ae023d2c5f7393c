package middleware

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// formEcho answers 200 with the principal's subject and the body it got.
func formEcho() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sub := "-"
		if p, ok := PrincipalFromContext(r.Context()); ok {
			sub = p.Subject
		}
		io.WriteString(w, sub+"|"+string(b))
	})
}

// plainRoutes builds the same routes on a gorilla/mux router and an
// http.ServeMux: /mcp (MCP, Handler), /api/ (Protect, base scopes),
// /api/admin/ (Protect plus "admin"), /hooks/{id} (Protect "hooks"
// only on POST) and /healthz (no token).
func plainRoutes(m *Middleware) map[string]http.Handler {
	r := mux.NewRouter()
	r.Handle("/mcp", m.Handler(formEcho()))
	r.Handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	api := r.PathPrefix("/api/").Subrouter()
	api.Use(m.Protect())
	admin := api.PathPrefix("/admin/").Subrouter()
	admin.Use(m.RequireScopes("admin"))
	admin.Handle("/{rest:.*}", formEcho())
	api.Handle("/{rest:.*}", formEcho())
	r.Handle("/hooks/{id}", m.Protect("hooks")(formEcho())).Methods(http.MethodPost)

	sm := http.NewServeMux()
	sm.Handle("/mcp", m.Handler(formEcho()))
	sm.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	sm.Handle("/api/", m.Protect()(formEcho()))
	sm.Handle("/api/admin/", m.Protect("admin")(formEcho()))
	sm.Handle("POST /hooks/{id}", m.Protect("hooks")(formEcho()))
	return map[string]http.Handler{"gorilla/mux": r, "http.ServeMux": sm}
}

func TestProtect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	base := f.token(t, "mcp")
	admin := f.token(t, "mcp", "admin")
	hooks := f.token(t, "mcp", "hooks")
	const (
		adminChallenge = `Bearer error="insufficient_scope", scope="mcp admin", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`
		hooksChallenge = `Bearer error="insufficient_scope", scope="mcp hooks", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`
	)
	for _, c := range []struct {
		name, method, path, body, ctype, token string
		status                                 int
		wwwAuth, want                          string
	}{
		{"form body untouched", http.MethodPost, "/api/items", "a=1&b=2", "application/x-www-form-urlencoded", base, 200, "", "user-1|a=1&b=2"},
		{"empty body", http.MethodPost, "/api/items", "", "", base, 200, "", "user-1|"},
		{"not JSON", http.MethodPut, "/api/items/1", "{not json", "application/json", base, 200, "", "user-1|{not json"},
		{"JSON-RPC lookalike is not an MCP operation", http.MethodPost, "/api/rpc", rpcBody(legacyRev, "tools/call", "delete_repo"), "application/json", base, 200, "", "user-1|" + rpcBody(legacyRev, "tools/call", "delete_repo")},
		{"GET", http.MethodGet, "/api/items", "", "", base, 200, "", "user-1|"},
		{"no token", http.MethodPost, "/api/items", "a=1", "application/x-www-form-urlencoded", "", 401, noTokenChallenge, ""},
		{"bad token", http.MethodGet, "/api/items", "", "", "garbage", 401, "", ""},
		{"admin without scope", http.MethodGet, "/api/admin/users", "", "", base, 403, adminChallenge, ""},
		{"admin", http.MethodDelete, "/api/admin/users", "", "", admin, 200, "", "user-1|"},
		{"webhook without scope", http.MethodPost, "/hooks/42", "payload", "text/plain", base, 403, hooksChallenge, ""},
		{"webhook", http.MethodPost, "/hooks/42", "payload", "text/plain", hooks, 200, "", "user-1|payload"},
		{"health needs no token", http.MethodGet, "/healthz", "", "", "", 200, "", "ok"},
		{"MCP still parses", http.MethodPost, "/mcp", "a=1", "application/x-www-form-urlencoded", base, 400, "", ""},
	} {
		for router, h := range plainRoutes(f.m) {
			t.Run(router+"/"+c.name, func(t *testing.T) {
				r := httptest.NewRequest(c.method, "https://mcp.example.com"+c.path, strings.NewReader(c.body))
				if c.ctype != "" {
					r.Header.Set("Content-Type", c.ctype)
				}
				if c.token != "" {
					r.Header.Set("Authorization", "Bearer "+c.token)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != c.status {
					t.Fatalf("status %d, want %d; body %s", w.Code, c.status, w.Body)
				}
				if c.wwwAuth != "" && w.Header().Get("WWW-Authenticate") != c.wwwAuth {
					t.Errorf("WWW-Authenticate = %q, want %q", w.Header().Get("WWW-Authenticate"), c.wwwAuth)
				}
				if c.want != "" && w.Body.String() != c.want {
					t.Errorf("body %q, want %q", w.Body, c.want)
				}
			})
		}
	}
}

// TestProtectPublicNeverApplies: public MCP operations do not open plain
// routes.
func TestProtectPublicNeverApplies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, withPublic(testPublic))
	r := rpcRequest(legacyRev, "ping", "", "")
	w := httptest.NewRecorder()
	f.m.Protect()(formEcho()).ServeHTTP(w, r)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != noTokenChallenge {
		t.Errorf("tokenless ping on a plain route: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}

func TestProtectDecisions(t *testing.T) {
	t.Parallel()
	var got []Decision
	f := newFixture(t, func(c *Config) { c.OnDecision = func(_ context.Context, d Decision) { got = append(got, d) } })
	h := f.m.Protect("hooks")(formEcho())
	for _, tok := range []string{"", f.token(t, "mcp"), f.token(t, "mcp", "hooks")} {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader("x"))
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	want := []struct {
		status int
		reason Reason
	}{{401, reasonNoToken}, {403, reasonInsufficientScope}, {0, reasonAuthorized}}
	if len(got) != len(want) {
		t.Fatalf("%d decisions, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Status != w.status || got[i].Reason != w.reason || got[i].Method != "" {
			t.Errorf("decision %d = %+v, want %d %s", i, got[i], w.status, w.reason)
		}
	}
}

func TestProtectPanics(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for name, fn := range map[string]func(){
		"offline_access": func() { f.m.Protect("offline_access") },
		"bad scope":      func() { f.m.Protect("a b") },
		"nil handler":    func() { f.m.Protect()(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}
