package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScopesSupportedFromPolicy: a nil Metadata.ScopesSupported is the
// base scopes and every scope of the operation policy, de-duplicated in a
// stable order; a set one is published unchanged.
func TestScopesSupportedFromPolicy(t *testing.T) {
	const all = `"scopes_supported":["mcp","prompts:read","res:read","tools:call","tools:read","repo:admin","weather:read","repo:write","prompts:secret","files:config","files:read","files:secret"]`
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // the scopes_supported member, or "" for none
	}{
		{"derived", func(c *Config) { c.Metadata.ScopesSupported = nil }, all},
		{"derived, duplicates once", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Operations.Tools["again"] = []string{"mcp", "repo:admin"}
		}, all},
		{"base only", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Operations = OperationPolicy{}
		}, `"scopes_supported":["mcp"]`},
		{"policy only", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Scopes = nil
			c.Operations = OperationPolicy{Tools: map[string][]string{"b": {"y"}, "a": {"x"}}}
		}, `"scopes_supported":["x","y"]`},
		{"nothing", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Scopes = nil
			c.Operations = OperationPolicy{}
		}, ""},
		{"given", func(c *Config) { c.Metadata.ScopesSupported = []string{"mcp", "hidden-rest"} }, `"scopes_supported":["mcp","hidden-rest"]`},
	}
	f := newFixture(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.with(t, tt.mutate).m
			rec := httptest.NewRecorder()
			m.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metadataURL, nil))
			body := rec.Body.String()
			want := `{"resource":"` + resource + `","authorization_servers":["` + f.iss.URL + `"]`
			if tt.want != "" {
				want += "," + tt.want
			}
			if rec.Code != http.StatusOK || body != want+"}" {
				t.Errorf("metadata = %d %s\nwant %s}", rec.Code, body, want)
			}
		})
	}
}

// TestScopesSupportedRoutes: the scopes of Protect and RequireScopes routes
// are published in a derived scopes_supported once the routes are built
// (a client registering with scopes_supported can then obtain them), each
// once; a given ScopesSupported stays as given. Routes built while the
// document is served race with nothing (-race).
func TestScopesSupportedRoutes(t *testing.T) {
	f := newFixture(t, nil)
	get := func(m *Middleware) string {
		rec := httptest.NewRecorder()
		m.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metadataURL, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("metadata: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	head := `{"resource":"` + resource + `","authorization_servers":["` + f.iss.URL + `"],`
	tests := []struct {
		name   string
		mutate func(*Config)
		routes func(m *Middleware)
		want   string
	}{
		{"derived", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Operations = OperationPolicy{Tools: map[string][]string{"t": {"tools:x"}}}
		}, func(m *Middleware) {
			_ = m.Protect("admin:write")
			_ = m.RequireScopes("reports:read", "mcp", "admin:write")
			_ = m.Protect("tools:x", "hooks")
		}, `"scopes_supported":["mcp","tools:x","admin:write","reports:read","hooks"]`},
		{"derived, no policy scopes", func(c *Config) {
			c.Metadata.ScopesSupported = nil
			c.Scopes = nil
			c.Operations = OperationPolicy{}
		}, func(m *Middleware) { _ = m.RequireScopes("reports:read") }, `"scopes_supported":["reports:read"]`},
		{"given", func(c *Config) { c.Metadata.ScopesSupported = []string{"mcp"} }, func(m *Middleware) {
			_ = m.Protect("admin:write")
			_ = m.RequireScopes("reports:read")
		}, `"scopes_supported":["mcp"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.with(t, tt.mutate).m
			done := make(chan struct{})
			go func() { // served while the routes are built
				defer close(done)
				for range 20 {
					_ = get(m)
				}
			}()
			tt.routes(m)
			<-done
			if got, want := get(m), head+tt.want+"}"; got != want {
				t.Errorf("metadata after the routes:\n got %s\nwant %s", got, want)
			}
		})
	}
}
