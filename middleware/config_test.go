package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

func TestNewErrors(t *testing.T) {
	fv := fakeValidator{claims: fakeClaims()}
	good := func() Config {
		return Config{
			Validator: fv,
			Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{"https://as.example.com"}},
		}
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr error
	}{
		{"ok", func(*Config) {}, nil},
		{"no validator", func(c *Config) { c.Validator = nil }, errConfig},
		{"typed nil validator", func(c *Config) { c.Validator = (*validate.Validator)(nil) }, errConfig},
		{"no metadata", func(c *Config) { c.Metadata = prm.Metadata{} }, prm.ErrInvalidMetadata},
		{"no authorization server", func(c *Config) { c.Metadata.AuthorizationServers = nil }, prm.ErrInvalidMetadata},
		{"http resource", func(c *Config) { c.Metadata.Resource = "http://mcp.example.com/mcp" }, prm.ErrInvalidMetadata},
		{"resource with fragment", func(c *Config) { c.Metadata.Resource = resource + "#x" }, prm.ErrInvalidMetadata},
		{"bad base scope", func(c *Config) { c.Scopes = []string{"a b"} }, errConfig},
		{"empty base scope", func(c *Config) { c.Scopes = []string{""} }, errConfig},
		{"offline_access required", func(c *Config) { c.Scopes = []string{"offline_access"} }, errConfig},
		{"offline_access tool", func(c *Config) { c.Operations.Tools = map[string][]string{"t": {"offline_access"}} }, errConfig},
		{"empty method name", func(c *Config) { c.Operations.Methods = map[string][]string{"": {"a"}} }, errConfig},
		{"bad tool scope", func(c *Config) { c.Operations.Tools = map[string][]string{"t": {`"q"`}} }, errConfig},
		{"empty prompt name", func(c *Config) { c.Operations.Prompts = map[string][]string{"": nil} }, errConfig},
		{"empty resource URI", func(c *Config) { c.Operations.Resources = []ResourceRule{{URI: ""}} }, errConfig},
		{"repeated resource rule", func(c *Config) {
			c.Operations.Resources = []ResourceRule{{URI: "a", Prefix: true}, {URI: "a", Prefix: true}}
		}, errConfig},
		{"exact and prefix same URI ok", func(c *Config) {
			c.Operations.Resources = []ResourceRule{{URI: "file:///a"}, {URI: "file:///a", Prefix: true}}
		}, nil},
		{"bad implies key", func(c *Config) { c.ScopeImplies = map[string][]string{"a b": {"c"}} }, errConfig},
		{"bad implies value", func(c *Config) { c.ScopeImplies = map[string][]string{"a": {""}} }, errConfig},
		{"implies cycle ok", func(c *Config) { c.ScopeImplies = map[string][]string{"a": {"b"}, "b": {"a"}} }, nil},
		{"unknown legacy strategy", func(c *Config) { c.LegacyScopes = 7 }, errConfig},
		{"negative window", func(c *Config) { c.StepUpWindow = -1 }, errConfig},
		{"negative body", func(c *Config) { c.MaxBodyBytes = -1 }, errConfig},
		{"negative retry", func(c *Config) { c.RetryAfter = -1 }, errConfig},
		{"realm with newline", func(c *Config) { c.Realm = "a\nb" }, errConfig},
		{"bad origin", func(c *Config) { c.AllowedOrigins = []string{"localhost:3000"} }, errConfig},
		{"origin with path", func(c *Config) { c.AllowedOrigins = []string{"https://a.example/x"} }, errConfig},
		{"null origin", func(c *Config) { c.AllowedOrigins = []string{"null"} }, errConfig},
		{"star with others", func(c *Config) { c.AllowedOrigins = []string{"*", "https://a.example"} }, errConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(&c)
			m, err := New(c)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("New() error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && m == nil {
				t.Fatal("New() = nil, nil")
			}
		})
	}
}

// TestConfigCopied: changing the caller's slices and maps after New has no
// effect.
func TestConfigCopied(t *testing.T) {
	scopes := []string{"mcp"}
	tools := map[string][]string{"t": {"x"}}
	implies := map[string][]string{"all": {"mcp"}}
	m := newFake(t, fakeValidator{claims: fakeClaims("all")}, func(c *Config) {
		c.Scopes = scopes
		c.Operations.Tools = tools
		c.ScopeImplies = implies
	})
	scopes[0] = "changed"
	tools["t"][0] = "changed"
	implies["all"][0] = "changed"
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Authorization", "Bearer x")
	rec := httptest.NewRecorder()
	m.Handler(echoHandler()).ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (config must be copied)", rec.Code)
	}
}

func TestAccessors(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, nil)
	if got := m.ResourceMetadataURL(); got != metadataURL {
		t.Errorf("ResourceMetadataURL() = %q, want %q", got, metadataURL)
	}
	ins, root := m.MetadataPaths()
	if ins != "/.well-known/oauth-protected-resource/mcp" || root != "/.well-known/oauth-protected-resource" {
		t.Errorf("MetadataPaths() = %q, %q", ins, root)
	}
	for _, p := range []string{ins, root} {
		rec := httptest.NewRecorder()
		m.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("metadata %s: status %d", p, rec.Code)
		}
	}
}

func TestCompileImplies(t *testing.T) {
	c := compileImplies(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}, "x": {"y"}})
	for _, tt := range []struct {
		from, to string
		want     bool
	}{{"a", "c", true}, {"b", "a", true}, {"x", "y", true}, {"y", "x", false}, {"a", "y", false}} {
		_, got := c[tt.from][tt.to]
		if got != tt.want {
			t.Errorf("%s implies %s = %t, want %t", tt.from, tt.to, got, tt.want)
		}
	}
}
