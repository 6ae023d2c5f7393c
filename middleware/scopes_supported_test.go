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
			want := `{"resource":"` + resource + `","authorization_servers":["` + f.iss.URL() + `"]`
			if tt.want != "" {
				want += "," + tt.want
			}
			if rec.Code != http.StatusOK || body != want+"}" {
				t.Errorf("metadata = %d %s\nwant %s}", rec.Code, body, want)
			}
		})
	}
}
