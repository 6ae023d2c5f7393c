package prm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/golden"
)

const (
	resource = "https://mcp.example.com/mcp"
	issuer   = "https://auth.example.com"
)

func valid() Metadata {
	return Metadata{Resource: resource, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"files:read"}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(m *Metadata)
		wantErr error
	}{
		{"minimal", func(*Metadata) {}, nil},
		{"origin resource", func(m *Metadata) { m.Resource = "https://mcp.example.com" }, nil},
		{"root slash", func(m *Metadata) { m.Resource = "https://mcp.example.com/" }, nil},
		{"port", func(m *Metadata) { m.Resource = "https://mcp.example.com:8443/server/mcp" }, nil},
		{"uppercase scheme and host accepted", func(m *Metadata) { m.Resource = "HTTPS://MCP.Example.COM/mcp" }, nil},
		{"loopback http 127.0.0.1", func(m *Metadata) { m.Resource = "http://127.0.0.1:8080/mcp" }, nil},
		{"loopback http 127.8.9.10", func(m *Metadata) { m.Resource = "http://127.8.9.10/mcp" }, nil},
		{"loopback http ::1", func(m *Metadata) { m.Resource = "http://[::1]:3000/mcp" }, nil},
		{"loopback http localhost", func(m *Metadata) { m.Resource = "http://LocalHost:3000/mcp" }, nil},
		{"all members", func(m *Metadata) { *m = loadJSON(t, "full.json") }, nil},

		{"nil", nil, ErrInvalidMetadata},
		{"no resource", func(m *Metadata) { m.Resource = "" }, ErrInvalidMetadata},
		{"no scheme", func(m *Metadata) { m.Resource = "mcp.example.com" }, ErrInvalidMetadata},
		{"relative", func(m *Metadata) { m.Resource = "/mcp" }, ErrInvalidMetadata},
		{"http non-loopback", func(m *Metadata) { m.Resource = "http://mcp.example.com/mcp" }, ErrInvalidMetadata},
		{"http localhost lookalike", func(m *Metadata) { m.Resource = "http://localhost.evil.example/mcp" }, ErrInvalidMetadata},
		{"ftp", func(m *Metadata) { m.Resource = "ftp://mcp.example.com/mcp" }, ErrInvalidMetadata},
		{"fragment", func(m *Metadata) { m.Resource = "https://mcp.example.com#fragment" }, ErrInvalidMetadata},
		{"empty fragment", func(m *Metadata) { m.Resource = "https://mcp.example.com/mcp#" }, ErrInvalidMetadata},
		{"query", func(m *Metadata) { m.Resource = "https://mcp.example.com/mcp?tenant=1" }, ErrInvalidMetadata},
		{"empty query", func(m *Metadata) { m.Resource = "https://mcp.example.com/mcp?" }, ErrInvalidMetadata},
		{"userinfo", func(m *Metadata) { m.Resource = "https://user@mcp.example.com/mcp" }, ErrInvalidMetadata},
		{"no host", func(m *Metadata) { m.Resource = "https:///mcp" }, ErrInvalidMetadata},
		{"dot segment", func(m *Metadata) { m.Resource = "https://mcp.example.com/a/../mcp" }, ErrInvalidMetadata},
		{"space", func(m *Metadata) { m.Resource = "https://mcp.example.com/m cp" }, ErrInvalidMetadata},
		{"non-ASCII", func(m *Metadata) { m.Resource = "https://mcp.example.com/ü" }, ErrInvalidMetadata},
		{"no authorization server", func(m *Metadata) { m.AuthorizationServers = nil }, ErrInvalidMetadata},
		{"empty authorization server", func(m *Metadata) { m.AuthorizationServers = []string{issuer, ""} }, ErrInvalidMetadata},
		{"http authorization server", func(m *Metadata) { m.AuthorizationServers = []string{"http://auth.example.com"} }, ErrInvalidMetadata},
		{"javascript authorization server", func(m *Metadata) { m.AuthorizationServers = []string{"javascript:alert(1)"} }, ErrInvalidMetadata},
		{"authorization server with query", func(m *Metadata) { m.AuthorizationServers = []string{issuer + "?x=1"} }, ErrInvalidMetadata},
		{"offline_access", func(m *Metadata) { m.ScopesSupported = []string{"files:read", "offline_access"} }, ErrInvalidMetadata},
		{"empty scope", func(m *Metadata) { m.ScopesSupported = []string{""} }, ErrInvalidMetadata},
		{"scope with space", func(m *Metadata) { m.ScopesSupported = []string{"a b"} }, ErrInvalidMetadata},
		{"bearer method", func(m *Metadata) { m.BearerMethodsSupported = []string{"cookie"} }, ErrInvalidMetadata},
		{"alg none", func(m *Metadata) { m.ResourceSigningAlgValuesSupported = []string{"none"} }, ErrInvalidMetadata},
		{"empty dpop alg", func(m *Metadata) { m.DPoPSigningAlgValuesSupported = []string{""} }, ErrInvalidMetadata},
		{"empty details type", func(m *Metadata) { m.AuthorizationDetailsTypesSupported = []string{""} }, ErrInvalidMetadata},
		{"http jwks_uri", func(m *Metadata) { m.JWKSURI = "http://mcp.example.com/jwks" }, ErrInvalidMetadata},
		{"javascript documentation", func(m *Metadata) { m.ResourceDocumentation = "javascript:alert(1)" }, ErrInvalidMetadata},
		{"relative tos", func(m *Metadata) { m.ResourceTOSURI = "/tos" }, ErrInvalidMetadata},
		{"signed_metadata shape", func(m *Metadata) { m.SignedMetadata = "not-a-jwt" }, ErrInvalidMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mp *Metadata
			if tt.edit != nil {
				m := valid()
				tt.edit(&m)
				mp = &m
			}
			err := mp.Validate()
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Validate() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestMetadataURL(t *testing.T) {
	tests := []struct {
		name, resource, want, wantRoot string
		wantErr                        error
	}{
		{"spec 5.5", "https://example.com/public/mcp", "https://example.com/.well-known/oauth-protected-resource/public/mcp", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"origin", "https://example.com", "https://example.com/.well-known/oauth-protected-resource", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"terminating slash", "https://example.com/", "https://example.com/.well-known/oauth-protected-resource", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"path trailing slash kept", "https://example.com/mcp/", "https://example.com/.well-known/oauth-protected-resource/mcp/", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"port", "https://example.com:8443/mcp", "https://example.com:8443/.well-known/oauth-protected-resource/mcp", "https://example.com:8443/.well-known/oauth-protected-resource", nil},
		{"query kept (RFC 9728 §3.1)", "https://example.com/mcp?tenant=a", "https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"query without path", "https://example.com?tenant=a", "https://example.com/.well-known/oauth-protected-resource?tenant=a", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"escaping kept", "https://example.com/a%2Fb/c%20d", "https://example.com/.well-known/oauth-protected-resource/a%2Fb/c%20d", "https://example.com/.well-known/oauth-protected-resource", nil},
		{"uppercase lowered", "HTTPS://MCP.Example.COM/MCP", "https://mcp.example.com/.well-known/oauth-protected-resource/MCP", "https://mcp.example.com/.well-known/oauth-protected-resource", nil},
		{"loopback", "http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:3000/.well-known/oauth-protected-resource", nil},
		{"ipv6", "https://[2001:db8::1]:8443/mcp", "https://[2001:db8::1]:8443/.well-known/oauth-protected-resource/mcp", "https://[2001:db8::1]:8443/.well-known/oauth-protected-resource", nil},

		{"no scheme", "example.com/mcp", "", "", ErrInvalidResource},
		{"fragment", "https://example.com/mcp#x", "", "", ErrInvalidResource},
		{"userinfo", "https://u:p@example.com/mcp", "", "", ErrInvalidResource},
		{"scheme", "ws://example.com/mcp", "", "", ErrInvalidResource},
		{"no host", "https:///mcp", "", "", ErrInvalidResource},
		{"opaque", "https:example.com", "", "", ErrInvalidResource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MetadataURL(tt.resource)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("MetadataURL() = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil {
				return
			}
			// The root-form URL, as MetadataURL's doc says: the
			// MetadataURL of the origin.
			u, _ := url.Parse(tt.resource)
			root, err := MetadataURL(strings.ToLower(u.Scheme + "://" + u.Host))
			if err != nil || root != tt.wantRoot {
				t.Errorf("MetadataURL(origin) = %q, %v; want %q", root, err, tt.wantRoot)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	tests := []struct {
		resource, wantInserted string
		wantErr                error
	}{
		{"https://example.com/public/mcp", "/.well-known/oauth-protected-resource/public/mcp", nil},
		{"https://example.com", "/.well-known/oauth-protected-resource", nil},
		{"https://example.com/", "/.well-known/oauth-protected-resource", nil},
		{"https://example.com/mcp/", "/.well-known/oauth-protected-resource/mcp/", nil},
		{"https://example.com/mcp?x=1", "", ErrInvalidResource},
		{"http://example.com/mcp", "", ErrInvalidResource},
		{"https://example.com/a%20b", "", ErrInvalidResource},
		{"https://example.com/caf%C3%A9", "", ErrInvalidResource},
		{"https://example.com/{id}", "", ErrInvalidResource},
		{"https://example.com//mcp", "", ErrInvalidResource},
		{"https://example.com/a//b", "", ErrInvalidResource},
		// ServeMux would redirect these, never serve them (found by FuzzMetadataJSON).
		{"https://example.com//", "", ErrInvalidResource},
		{"https://example.com/mcp//", "", ErrInvalidResource},
		{"https://example.com/v1/mcp:stream@x;y=1", "/.well-known/oauth-protected-resource/v1/mcp:stream@x;y=1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			ins, root, err := Paths(tt.resource)
			if !errors.Is(err, tt.wantErr) || ins != tt.wantInserted {
				t.Fatalf("Paths() = %q, %v; want %q, %v", ins, err, tt.wantInserted, tt.wantErr)
			}
			if err == nil && root != wellKnownPath {
				t.Errorf("root = %q, want %q", root, wellKnownPath)
			}
		})
	}
}

// TestHandler drives every method and path through the handler, with the
// request headers a proxy or attacker might set, and checks exact status,
// headers and body.
func TestHandler(t *testing.T) {
	m := loadJSON(t, "full.json")
	h, err := Handler(m)
	if err != nil {
		t.Fatal(err)
	}
	insertedBody := mustMarshal(t, m)
	rootDoc := m
	rootDoc.Resource = "https://mcp.example.com"
	rootBody := mustMarshal(t, rootDoc)

	okHeaders := func(body string) http.Header {
		return http.Header{
			"Content-Type":                {"application/json"},
			"Cache-Control":               {"public, max-age=3600"},
			"X-Content-Type-Options":      {"nosniff"},
			"Access-Control-Allow-Origin": {"*"},
			"Content-Length":              {fmt.Sprint(len(body))},
		}
	}
	preflight := http.Header{
		"Allow":                        {"GET, HEAD, OPTIONS"},
		"Access-Control-Allow-Origin":  {"*"},
		"Access-Control-Allow-Methods": {"GET, HEAD, OPTIONS"},
		"Access-Control-Allow-Headers": {"Authorization, MCP-Protocol-Version"},
		"Access-Control-Max-Age":       {"7200"},
	}
	notAllowed := http.Header{
		"Allow":                  {"GET, HEAD, OPTIONS"},
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
	}
	notFound := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
	}
	const ins = "/.well-known/oauth-protected-resource/mcp"
	const root = "/.well-known/oauth-protected-resource"
	spoof := map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http", "Forwarded": "host=evil.example;proto=http"}
	tests := []struct {
		name, method, target, host string
		header                     map[string]string
		wantCode                   int
		wantHeader                 http.Header
		wantBody                   string
	}{
		{"GET inserted", "GET", ins, "", nil, 200, okHeaders(insertedBody), insertedBody},
		{"GET root", "GET", root, "", nil, 200, okHeaders(rootBody), rootBody},
		{"HEAD inserted", "HEAD", ins, "", nil, 200, okHeaders(insertedBody), ""},
		{"GET spoofed Host", "GET", ins, "evil.example", spoof, 200, okHeaders(insertedBody), insertedBody},
		{"GET root spoofed Host", "GET", root, "evil.example:8443", spoof, 200, okHeaders(rootBody), rootBody},
		{"GET with query", "GET", ins + "?resource=https://evil.example", "", nil, 200, okHeaders(insertedBody), insertedBody},
		{"OPTIONS preflight", "OPTIONS", ins, "", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}, 204, preflight, ""},
		{"OPTIONS root", "OPTIONS", root, "", nil, 204, preflight, ""},
		{"POST", "POST", ins, "", nil, 405, notAllowed, "method not allowed\n"},
		{"DELETE root", "DELETE", root, "", nil, 405, notAllowed, "method not allowed\n"},
		{"trailing slash inserted", "GET", ins + "/", "", nil, 404, notFound, "404 page not found\n"},
		{"trailing slash root", "GET", root + "/", "", nil, 404, notFound, "404 page not found\n"},
		{"uppercase path", "GET", "/.well-known/oauth-protected-resource/MCP", "", nil, 404, notFound, "404 page not found\n"},
		{"other resource path", "GET", root + "/other", "", nil, 404, notFound, "404 page not found\n"},
		{"suffix", "GET", ins + "/x", "", nil, 404, notFound, "404 page not found\n"},
		{"mcp endpoint", "GET", "/mcp", "", nil, 404, notFound, "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantCode)
			}
			if !reflect.DeepEqual(rec.Header(), tt.wantHeader) {
				t.Errorf("headers\n got %v\nwant %v", rec.Header(), tt.wantHeader)
			}
			if got := rec.Body.String(); got != tt.wantBody {
				t.Errorf("body\n got %s\nwant %s", got, tt.wantBody)
			}
		})
	}
}

func TestHandlerGolden(t *testing.T) {
	tests := []struct {
		name, file, path string
	}{
		{"full_inserted", "full.json", "/.well-known/oauth-protected-resource/mcp"},
		{"full_root", "full.json", "/.well-known/oauth-protected-resource"},
		{"tutorial_inserted", "spec_tutorial.json", "/.well-known/oauth-protected-resource/mcp"},
		{"tutorial_root", "spec_tutorial.json", "/.well-known/oauth-protected-resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := Handler(loadJSON(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
			golden.Check(t, tt.name+".golden", golden.DumpResponse(rec))
		})
	}
}

func TestHandlerOriginResource(t *testing.T) {
	for _, res := range []string{"https://mcp.example.com", "https://mcp.example.com/"} {
		t.Run(res, func(t *testing.T) {
			m := valid()
			m.Resource = res
			h, err := Handler(m)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", wellKnownPath, nil))
			var got Metadata
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Resource != res {
				t.Errorf("root resource = %q, %v; want %q", got.Resource, err, res)
			}
		})
	}
}

func TestHandlerRootKeepsConfiguredSpelling(t *testing.T) {
	m := valid()
	m.Resource = "https://MCP.example.com:8443/mcp"
	h, err := Handler(m)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", wellKnownPath, nil))
	var got Metadata
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Resource != "https://MCP.example.com:8443" {
		t.Errorf("root resource = %q, %v", got.Resource, err)
	}
}

func TestHandlerRejectsInvalid(t *testing.T) {
	for _, name := range []string{"offline_access.json"} {
		if _, err := Handler(loadJSON(t, name)); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("Handler(%s) error = %v, want %v", name, err, ErrInvalidMetadata)
		}
	}
	if _, err := Handler(Metadata{Resource: resource}); !errors.Is(err, ErrInvalidMetadata) {
		t.Errorf("Handler(no authorization_servers) error = %v, want %v", err, ErrInvalidMetadata)
	}
}

func TestHandlerCopiesMetadata(t *testing.T) {
	m := valid()
	h, err := Handler(m)
	if err != nil {
		t.Fatal(err)
	}
	m.AuthorizationServers[0] = "https://evil.example"
	m.ScopesSupported[0] = "admin"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	if strings.Contains(rec.Body.String(), "evil") || strings.Contains(rec.Body.String(), "admin") {
		t.Errorf("handler saw a later change to the caller's slices: %s", rec.Body)
	}
}

func loadJSON(t *testing.T, name string) Metadata {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustMarshal(t *testing.T, m Metadata) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
