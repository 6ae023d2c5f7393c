package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/gorilla/mux"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const stepUpDesc = `error_description="The operation requires additional scope"`

// whoami answers with the subject of the principal the middleware put in
// the context.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, ok := middleware.PrincipalFromContext(r.Context())
	if !ok {
		http.Error(w, "no principal", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "sub=%s client=%s", p.Subject, p.ClientID)
})

// testServer starts a loopback server whose handler mount builds around a
// Guard for resource srv.URL+"/mcp", trusting iss with discovered keys on
// iss's pinned clock.
func testServer(t *testing.T, iss *authtest.Issuer, mount func(g *Guard) http.Handler) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	g, err := New(Config{
		Resource: resource,
		Issuers:  []string{iss.URL},
		Scopes:   []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{
			Tools: map[string][]string{"delete_repo": {"repo:admin"}},
		},
		Validate: validate.Config{Now: iss.Now},
		JWKS:     jwks.Config{Now: iss.Now},
		Metadata: prm.Metadata{ResourceName: "test server"},
	})
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	t.Cleanup(func() { _ = g.Close() })
	srv.Config.Handler = mount(g)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, resource
}

// call POSTs a tools/call of MCP 2025-11-25 to url with token (none if
// empty) and returns the status, the WWW-Authenticate header and the body.
func call(t *testing.T, url, token, tool string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// wellKnown is the RFC 9728 §3 well-known path of protected-resource
// metadata.
const wellKnown = "/.well-known/oauth-protected-resource"

// TestGuard drives a Guard mounted on http.ServeMux (Mount) and on
// gorilla/mux (Routes), with keys discovered from an authtest issuer.
func TestGuard(t *testing.T) {
	routers := []struct {
		name  string
		mount func(g *Guard) http.Handler
	}{
		{"servemux", func(g *Guard) http.Handler {
			mx := http.NewServeMux()
			g.Mount(mx, whoami)
			return mx
		}},
		{"gorilla", func(g *Guard) http.Handler {
			r := mux.NewRouter()
			for _, rt := range g.Routes(whoami) {
				r.Handle(rt.Pattern, rt.Handler)
			}
			return r
		}},
	}
	for _, rtr := range routers {
		t.Run(rtr.name, func(t *testing.T) {
			iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
			srv, resource := testServer(t, iss, rtr.mount)
			rm := srv.URL + wellKnown + "/mcp"
			tok := func(tk authtest.Token) string {
				if tk.Audience == nil {
					tk.Audience = []string{resource}
				}
				return iss.Token(t, tk)
			}

			// Metadata at both paths, without a token.
			for _, c := range []struct{ url, resource string }{{rm, resource}, {srv.URL + wellKnown, srv.URL}} {
				req, _ := http.NewRequest(http.MethodGet, c.url, nil)
				status, _, body := do(t, req)
				var md prm.Metadata
				if err := json.Unmarshal([]byte(body), &md); status != 200 || err != nil {
					t.Fatalf("GET %s = %d %s", c.url, status, body)
				}
				if md.Resource != c.resource || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != iss.URL ||
					strings.Join(md.ScopesSupported, " ") != "mcp:tools repo:admin" || md.ResourceName != "test server" {
					t.Errorf("GET %s = %+v", c.url, md)
				}
			}

			tests := []struct {
				name       string
				token      string
				tool       string
				wantStatus int
				wantHeader string
				wantBody   string
			}{
				{"no token", "", "get_weather", 401,
					`Bearer scope="mcp:tools", resource_metadata="` + rm + `"`, `{"error":"unauthorized"}`},
				{"valid", tok(authtest.Token{Scopes: []string{"mcp:tools"}}), "get_weather", 200, "", "sub=user-1 client=client-1"},
				{"step-up for a tool scope", tok(authtest.Token{Scopes: []string{"mcp:tools"}}), "delete_repo", 403,
					`Bearer error="insufficient_scope", scope="mcp:tools repo:admin", resource_metadata="` + rm + `", ` + stepUpDesc,
					`{"error":"insufficient_scope"}`},
				{"tool scope granted", tok(authtest.Token{Scopes: []string{"mcp:tools", "repo:admin"}}), "delete_repo", 200, "", "sub=user-1 client=client-1"},
				{"expired", tok(authtest.Expired()), "get_weather", 401,
					`Bearer error="invalid_token", scope="mcp:tools", resource_metadata="` + rm + `", error_description="The access token is invalid"`,
					`{"error":"invalid_token"}`},
				{"other audience", iss.Token(t, authtest.Token{}), "get_weather", 401,
					`Bearer error="invalid_token", scope="mcp:tools", resource_metadata="` + rm + `", error_description="The access token is invalid"`,
					`{"error":"invalid_token"}`},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					status, hdr, body := call(t, resource, tt.token, tt.tool)
					if status != tt.wantStatus || hdr != tt.wantHeader || body != tt.wantBody {
						t.Errorf("got %d %q %s\nwant %d %q %s", status, hdr, body, tt.wantStatus, tt.wantHeader, tt.wantBody)
					}
				})
			}
			if n := iss.Requests(iss.JWKSURL); n != 1 {
				t.Errorf("JWKS fetched %d times, want 1", n)
			}
		})
	}
}

// jwksGoroutines counts the goroutines running code of validate/jwks.
func jwksGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "mcpguard/validate/jwks.") {
			count++
		}
	}
	return count
}

// waitGoroutines waits until cond holds for the goroutine count, or fails.
func waitGoroutines(t *testing.T, what string, cond func(jwks, all int) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, all := jwksGoroutines(), runtime.NumGoroutine()
		if cond(j, all) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d jwks goroutines, %d in all", what, j, all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClose: New starts one key source per discovered issuer; Close stops
// them all and the goroutine count returns to where it was. Sources given
// in Keys are not created, not fetched, and not closed.
func TestClose(t *testing.T) {
	a := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/a"})
	b := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/b"})
	c := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/c"})
	waitGoroutines(t, "before New", func(j, _ int) bool { return j == 0 })
	before := runtime.NumGoroutine()

	g, err := New(Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []string{a.URL, b.URL, c.URL},
		Keys:     map[string]validate.KeySource{c.URL: &validate.StaticKeys{Set: c.Keys()}},
	})
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	waitGoroutines(t, "after New", func(j, _ int) bool { return j >= 2 })
	waitGoroutines(t, "first fetches", func(int, int) bool { return a.Requests(a.JWKSURL) == 1 && b.Requests(b.JWKSURL) == 1 })
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGoroutines(t, "after Close", func(j, all int) bool { return j == 0 && all <= before })
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n := c.Requests(c.JWKSURL); n != 0 {
		t.Errorf("issuer with static keys fetched %d times", n)
	}
}

// TestNewErrors: every missing value and conflict is refused with
// ErrConfig (and the sentinel of the package that refused it), and no key
// source is left running.
func TestNewErrors(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	const resource = "https://mcp.example.com/mcp"
	valid := func() Config {
		return Config{Resource: resource, Issuers: []string{iss.URL}, Scopes: []string{"mcp:tools"}}
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr error // besides ErrConfig
	}{
		{"no resource", func(c *Config) { c.Resource = "" }, nil},
		{"no issuers", func(c *Config) { c.Issuers = nil }, nil},
		{"empty issuer", func(c *Config) { c.Issuers = []string{""} }, nil},
		{"repeated issuer", func(c *Config) { c.Issuers = append(c.Issuers, iss.URL) }, nil},
		{"keys for unknown issuer", func(c *Config) {
			c.Keys = map[string]validate.KeySource{"https://other.example": &validate.StaticKeys{}}
		}, nil},
		{"nil keys", func(c *Config) { c.Keys = map[string]validate.KeySource{iss.URL: nil} }, nil},
		{"validate issuers set", func(c *Config) { c.Validate.Issuers = []validate.Issuer{} }, nil},
		{"audiences without resource", func(c *Config) { c.Validate.Audiences = []string{"https://other.example"} }, nil},
		{"middleware validator set", func(c *Config) { c.Middleware.Validator = &validate.Validator{} }, nil},
		{"middleware scopes set", func(c *Config) { c.Middleware.Scopes = []string{"x"} }, nil},
		{"middleware operations set", func(c *Config) { c.Middleware.Operations.DenyUnlisted = true }, nil},
		{"middleware metadata set", func(c *Config) { c.Middleware.Metadata.ResourceName = "x" }, nil},
		{"jwks url set", func(c *Config) { c.JWKS.JWKSURL = iss.JWKSURL }, nil},
		{"metadata resource differs", func(c *Config) { c.Metadata.Resource = "https://other.example/mcp" }, nil},
		{"metadata servers not trusted", func(c *Config) { c.Metadata.AuthorizationServers = []string{"https://other.example"} }, nil},
		{"resource not https", func(c *Config) { c.Resource = "http://mcp.example.com/mcp" }, prm.ErrInvalidMetadata},
		{"resource path not mountable", func(c *Config) { c.Resource = "https://mcp.example.com/a%20b" }, prm.ErrInvalidResource},
		{"offline_access in scopes", func(c *Config) { c.Scopes = []string{"offline_access"} }, middleware.Error{Reason: "config"}},
		{"bad jwks config", func(c *Config) { c.JWKS.MaxBytes = -1 }, jwks.ErrConfig},
		{"bad validate config", func(c *Config) { c.Validate.Algorithms = []jose.SignatureAlgorithm{} }, validate.ErrConfig},
		{"bad middleware config", func(c *Config) { c.Middleware.MaxBodyBytes = -1 }, middleware.Error{Reason: "config"}},
		{"token validator fails", func(c *Config) {
			c.TokenValidator = func(*validate.Validator) (middleware.TokenValidator, error) { return nil, errTestHook }
		}, errTestHook},
		{"token validator nil", func(c *Config) {
			c.TokenValidator = func(*validate.Validator) (middleware.TokenValidator, error) { return nil, nil }
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.mutate(&cfg)
			g, err := New(cfg)
			if !errors.Is(err, ErrConfig) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("New() error = %v, want %v and %v", err, ErrConfig, tt.wantErr)
			}
			if g != nil {
				t.Errorf("New() returned a Guard with an error")
			}
			waitGoroutines(t, "after failed New", func(j, _ int) bool { return j == 0 })
		})
	}
	g, err := New(valid())
	if err != nil {
		t.Fatalf("New(valid) = %v", err)
	}
	_ = g.Close()
}

var errTestHook = errors.New("test hook failed")

// wrappedValidator is a TokenValidator hook's result: it counts calls and
// defers to the JWT validator.
type wrappedValidator struct {
	jwt   *validate.Validator
	calls int
}

func (w *wrappedValidator) Validate(ctx context.Context, raw string) (*validate.Claims, error) {
	w.calls++
	return w.jwt.Validate(ctx, raw)
}

// TestTokenValidatorHook: the validator TokenValidator returns is the one
// the middleware asks, given the JWT validator New built.
func TestTokenValidatorHook(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	const resource = "https://mcp.example.com/mcp"
	var w *wrappedValidator
	g, err := New(Config{
		Resource: resource, Issuers: []string{iss.URL},
		Keys:     map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}},
		Validate: validate.Config{Now: iss.Now},
		TokenValidator: func(jwt *validate.Validator) (middleware.TokenValidator, error) {
			w = &wrappedValidator{jwt: jwt}
			return w, nil
		},
	})
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	defer g.Close()
	if w == nil || w.jwt != g.Validator() {
		t.Fatalf("TokenValidator got %v, want Guard.Validator()", w)
	}
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Authorization", "Bearer "+iss.Token(t, authtest.Token{Audience: []string{resource}}))
	rec := httptest.NewRecorder()
	g.Handler(whoami).ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || w.calls != 1 {
		t.Errorf("status %d, hook validator calls %d; want 200, 1", rec.Code, w.calls)
	}
}

// TestConfigPrecedence: advanced values that replace a default are used.
func TestConfigPrecedence(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	const resource = "https://mcp.example.com/mcp"
	var decisions []middleware.Reason
	g, err := New(Config{
		Resource: resource,
		Issuers:  []string{iss.URL},
		Keys:     map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}},
		Scopes:   []string{"mcp:tools"},
		Validate: validate.Config{Now: iss.Now, Audiences: []string{resource, "https://legacy.example"}},
		Middleware: middleware.Config{
			OnDecision: func(_ context.Context, d middleware.Decision) { decisions = append(decisions, d.Reason) },
		},
		Metadata: prm.Metadata{Resource: resource, ScopesSupported: []string{"mcp:tools", "mcp:admin"}},
	})
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	defer g.Close()
	h := g.Handler(whoami)
	for _, aud := range []string{resource, "https://legacy.example", "https://other.example"} {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+iss.Token(t, authtest.Token{Audience: []string{aud}, Scopes: []string{"mcp:tools"}}))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if got := fmt.Sprint(decisions); got != "[authorized authorized audience]" {
		t.Errorf("decisions = %s", got)
	}
	rec := httptest.NewRecorder()
	inserted, _ := g.Middleware().MetadataPaths()
	g.Middleware().MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, inserted, nil))
	if !strings.Contains(rec.Body.String(), `"scopes_supported":["mcp:tools","mcp:admin"]`) {
		t.Errorf("metadata = %s", rec.Body)
	}
	if g.Validator() == nil {
		t.Error("Validator() = nil")
	}
}
