package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

const (
	resource    = "https://mcp.example.com/mcp"
	metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	legacyRev   = "2025-11-25"
	modernRev   = "2026-07-28"
)

// fixture is an issuer, a real validator (cache disabled) with the
// issuer's pinned clock, and a Middleware with the test policy.
type fixture struct {
	iss *authtest.Issuer
	v   *validate.Validator
	m   *Middleware
	cfg Config
}

// testPolicy is the operation policy used throughout the tests.
func testConfig(v TokenValidator, iss *authtest.Issuer) Config {
	return Config{
		Validator: v,
		Metadata: prm.Metadata{
			Resource:             resource,
			AuthorizationServers: []string{iss.URL},
			ScopesSupported:      []string{"mcp"},
		},
		Scopes: []string{"mcp"},
		Operations: OperationPolicy{
			Methods: map[string][]string{
				"tools/list":     {"tools:read"},
				"tools/call":     {"tools:call"},
				"prompts/get":    {"prompts:read"},
				"resources/read": {"res:read"},
			},
			Tools: map[string][]string{
				"get_weather": {"weather:read"},
				"delete_repo": {"repo:admin"},
				"push":        {"repo:write"},
			},
			Prompts: map[string][]string{"secret_prompt": {"prompts:secret"}},
			Resources: []ResourceRule{
				{URI: "file:///projects/myapp/config.json", Scopes: []string{"files:config"}},
				{URI: "file:///projects/", Prefix: true, Scopes: []string{"files:read"}},
				{URI: "file:///projects/secret/", Prefix: true, Scopes: []string{"files:secret"}},
			},
		},
		ScopeImplies: map[string][]string{
			"repo:admin": {"repo:write"},
			"repo:write": {"repo:read"},
			"mcp:all":    {"mcp", "tools:read", "tools:call", "prompts:read", "res:read"},
		},
		Now: iss.Now,
	}
}

func newFixture(t testing.TB, mutate func(*Config)) *fixture {
	t.Helper()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:   []string{resource},
		TenantClaim: "tenant",
		Now:         iss.Now,
		CacheSize:   -1,
	})
	if err != nil {
		t.Fatalf("validate.New: %s", err.Error())
	}
	cfg := testConfig(v, iss)
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	return &fixture{iss: iss, v: v, m: m, cfg: cfg}
}

// with returns a copy of f with a new Middleware over the same issuer and
// validator, its config changed by mutate (nil for none).
func (f *fixture) with(t testing.TB, mutate func(*Config)) *fixture {
	t.Helper()
	cfg := testConfig(f.v, f.iss)
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	return &fixture{iss: f.iss, v: f.v, m: m, cfg: cfg}
}

// token mints a valid token with the given scopes.
func (f *fixture) token(t testing.TB, scopes ...string) string {
	t.Helper()
	return f.iss.Token(t, authtest.Token{Scopes: append([]string{}, scopes...)})
}

// oneSpec returns the only token spec of a helper's optional argument, or
// the zero (valid) one.
func oneSpec(t testing.TB, spec []authtest.Token) authtest.Token {
	t.Helper()
	switch len(spec) {
	case 0:
		return authtest.Token{}
	case 1:
		return spec[0]
	}
	t.Fatalf("%d token specs, want at most 1", len(spec))
	return authtest.Token{}
}

// rpcBody returns a JSON-RPC request body; for the modern revision it
// carries _meta protocolVersion.
func rpcBody(rev, method, name string) string {
	var params []string
	switch method {
	case "tools/call":
		params = append(params, fmt.Sprintf(`"name":%q,"arguments":{"location":"Seattle, WA"}`, name))
	case "prompts/get":
		params = append(params, fmt.Sprintf(`"name":%q`, name))
	case "resources/read":
		params = append(params, fmt.Sprintf(`"uri":%q`, name))
	}
	if rev == modernRev {
		params = append(params, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}`)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s}}`, method, strings.Join(params, ","))
}

// rpcRequest builds a POST with the headers a client of rev sends.
func rpcRequest(rev, method, name, token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(rpcBody(rev, method, name)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", rev)
	if rev == modernRev {
		r.Header.Set("Mcp-Method", method)
		if name != "" {
			r.Header.Set("Mcp-Name", name)
		}
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// echoHandler answers 200 with the principal's subject and the SHA-256 of
// the body it received.
func echoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusInternalServerError)
			return
		}
		sub := "-"
		if p, ok := PrincipalFromContext(r.Context()); ok {
			sub = p.Subject
		}
		sum := sha256.Sum256(b)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"sub":%q,"content_length":%d,"body_sha256":%q}`, sub, r.ContentLength, hex.EncodeToString(sum[:]))
	})
}

// fakeValidator returns fixed claims or a fixed error.
type fakeValidator struct {
	claims *validate.Claims
	err    error
}

func (f fakeValidator) Validate(context.Context, string) (*validate.Claims, error) {
	if f.err != nil {
		return nil, f.err
	}
	c := *f.claims
	return &c, nil
}

func fakeClaims(scopes ...string) *validate.Claims {
	return &validate.Claims{Issuer: "https://as.example.com", Subject: "user-1", ClientID: "client-1", Tenant: "tenant-a", Scopes: scopes}
}

// newFake returns a Middleware with the test policy over a fake validator.
func newFake(t testing.TB, fv fakeValidator, mutate func(*Config)) *Middleware {
	t.Helper()
	cfg := Config{
		Validator: fv,
		Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{"https://as.example.com"}},
		Scopes:    []string{"mcp"},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	return m
}
