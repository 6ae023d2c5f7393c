package integration

// End-to-end tests of token introspection (validate/introspect): the
// example MCP server (server.New) with an Introspector or a Hybrid as its
// validator, against an authtest issuer's RFC 7662 endpoint over real
// HTTP on 127.0.0.1. Identifiers start with "ix"; the request and answer
// helpers are the hx ones of helpers_hardening_*_test.go.

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// ixEnvConfig configures newIxEnv.
type ixEnvConfig struct {
	hybrid bool                     // validate with introspect.Hybrid, else an Introspector alone
	mut    func(*introspect.Config) // changes the Introspector's config
}

// newIxEnv starts an authtest issuer and the example server validating
// its tokens by introspection. The introspection endpoint is discovered
// from the issuer's metadata, as the example does without
// -introspection-endpoint. Everything shares the issuer's pinned clock.
func newIxEnv(t *testing.T, cfg ixEnvConfig) *hxEnv {
	t.Helper()
	e := &hxEnv{}
	e.ts = httptest.NewUnstartedServer(nil)
	e.mcpURL = "http://" + e.ts.Listener.Addr().String() + "/mcp"
	e.iss = authtest.NewIssuer(t, authtest.IssuerConfig{Audience: e.mcpURL})
	id, secret := e.iss.IntrospectionClientID, e.iss.IntrospectionSecret
	icfg := introspect.Config{
		Issuer: e.iss.URL, Audiences: []string{e.mcpURL}, ClientID: id, ClientSecret: secret,
		TenantClaim: "tenant", Timeout: 2 * time.Second, Now: e.iss.Now,
	}
	if cfg.mut != nil {
		cfg.mut(&icfg)
	}
	in, err := introspect.New(icfg)
	if err != nil {
		t.Fatalf("introspect.New: %v", err)
	}
	var v middleware.TokenValidator = in
	if cfg.hybrid {
		jv, err := validate.New(validate.Config{
			Issuers:     []validate.Issuer{{Issuer: e.iss.URL, Keys: &validate.StaticKeys{Set: e.iss.Keys()}}},
			Audiences:   []string{e.mcpURL},
			TenantClaim: "tenant",
			Now:         e.iss.Now,
		})
		if err != nil {
			t.Fatalf("validate.New: %v", err)
		}
		if v, err = introspect.NewHybrid(jv, in); err != nil {
			t.Fatalf("NewHybrid: %v", err)
		}
	}
	e.srv, err = server.New(server.Config{
		Resource:             e.mcpURL,
		AuthorizationServers: []string{e.iss.URL},
		Validator:            v,
		Scopes:               []string{hxBaseScope},
		Now:                  e.iss.Now,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	e.metaURL = e.srv.ResourceMetadataURL()
	e.ts.Config.Handler = e.reads.wrap(e.srv)
	e.ts.Start()
	e.client = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 20 * time.Second}
	t.Cleanup(e.close)
	return e
}

// ixOpaque mints an opaque token valid for notes_write.
func ixOpaque(t *testing.T, e *hxEnv, spec ...authtest.Token) string {
	t.Helper()
	tk := hxSpec(t, spec)
	if tk.Scopes == nil {
		tk.Scopes = []string{hxBaseScope, server.ScopeNotesWrite}
	}
	tk.Opaque = true
	return e.iss.Token(t, tk)
}

// ixCheck sends one notes_write call with tok and checks the exact answer
// and the number of introspection calls it caused.
func ixCheck(t *testing.T, e *hxEnv, tok string, want hxWant, wantCalls int64) {
	t.Helper()
	before := e.iss.Requests(e.iss.IntrospectionURL)
	got := e.do(hxContext(t, 10*time.Second), t, hxReq{authz: hxBearer(tok), text: "ix note"})
	want.check(t, got)
	if got.status != http.StatusOK && got.bodyRead != 0 {
		t.Errorf("refused request: the server read %d body bytes", got.bodyRead)
	}
	if n := e.iss.Requests(e.iss.IntrospectionURL) - before; n != wantCalls {
		t.Errorf("introspection calls = %d, want %d", n, wantCalls)
	}
}

func TestIntrospection(t *testing.T) {
	t.Run("active opaque token, then cached", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		tok := ixOpaque(t, e)
		ixCheck(t, e, tok, e.wantOK(), 1)
		ixCheck(t, e, tok, e.wantOK(), 0)
		if got := e.notes(hxContext(t, 10*time.Second), t); len(got) != 2 { // with a JWT, also introspected
			t.Errorf("notes = %q, want the two notes written", got)
		}
		if m := e.iss.Requests(e.iss.MetadataURLs...); m != 1 {
			t.Errorf("metadata fetches = %d, want 1 (endpoint discovered once)", m)
		}
	})
	t.Run("jwt introspected too", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		ixCheck(t, e, e.tok(t), e.wantOK(), 1)
	})
	t.Run("inactive", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		e.iss.SetFault("inactive", e.iss.IntrospectionURL)
		tok := ixOpaque(t, e)
		ixCheck(t, e, tok, e.wantInvalidToken(), 1)
		ixCheck(t, e, tok, e.wantInvalidToken(), 1) // inactive results are not cached by default
	})
	t.Run("revoked after caching", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{mut: func(c *introspect.Config) { c.MaxCacheTTL = time.Minute }})
		tok := ixOpaque(t, e)
		ixCheck(t, e, tok, e.wantOK(), 1)
		e.iss.SetFault("inactive", e.iss.IntrospectionURL)
		ixCheck(t, e, tok, e.wantOK(), 0)
		e.iss.Advance(time.Minute)
		ixCheck(t, e, tok, e.wantInvalidToken(), 1)
	})
	t.Run("lax endpoint: expired, wrong audience, unknown", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		e.iss.SetFault("always-active", e.iss.IntrospectionURL)
		ixCheck(t, e, ixOpaque(t, e, authtest.Expired()), e.wantInvalidToken(), 1)
		ixCheck(t, e, ixOpaque(t, e, authtest.WrongAudience()), e.wantInvalidToken(), 1)
		ixCheck(t, e, ixOpaque(t, e, authtest.WrongIssuer()), e.wantInvalidToken(), 1)
		ixCheck(t, e, "never-issued", e.wantInvalidToken(), 1)
	})
	t.Run("endpoint error", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		e.iss.SetFault("server-error", e.iss.IntrospectionURL)
		tok := ixOpaque(t, e)
		ixCheck(t, e, tok, e.wantUnavailable(), 1)
		e.iss.SetFault("", e.iss.IntrospectionURL)
		ixCheck(t, e, tok, e.wantOK(), 1) // the error was not cached
	})
	t.Run("endpoint faults", func(t *testing.T) {
		for _, f := range []authtest.Fault{"hang", "too-many-requests", "wrong-content-type", "huge", "refuse"} {
			t.Run(string(f), func(t *testing.T) {
				e := newIxEnv(t, ixEnvConfig{mut: func(c *introspect.Config) { c.Timeout = 300 * time.Millisecond }})
				e.iss.SetFault(f, e.iss.IntrospectionURL)
				ixCheck(t, e, ixOpaque(t, e), e.wantUnavailable(), 1)
			})
		}
	})
	t.Run("wrong client credentials", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{mut: func(c *introspect.Config) { c.ClientSecret = "wrong" }})
		ixCheck(t, e, ixOpaque(t, e), e.wantUnavailable(), 1)
	})
	t.Run("discovery failure", func(t *testing.T) {
		e := newIxEnv(t, ixEnvConfig{})
		e.iss.SetFault("server-error", e.iss.MetadataURLs...)
		ixCheck(t, e, ixOpaque(t, e), e.wantUnavailable(), 0)
	})
}

func TestHybridIntrospection(t *testing.T) {
	e := newIxEnv(t, ixEnvConfig{hybrid: true})
	// A lax endpoint would vouch for anything it issued: the hybrid never
	// asks it about JWTs of the trusted issuer.
	e.iss.SetFault("always-active", e.iss.IntrospectionURL)
	ixCheck(t, e, e.tok(t), e.wantOK(), 0)
	ixCheck(t, e, e.tok(t, authtest.Token{ForeignKey: true}), e.wantInvalidToken(), 0)
	ixCheck(t, e, e.tok(t, authtest.Expired()), e.wantInvalidToken(), 0)
	ixCheck(t, e, e.tok(t, authtest.AlgNone()), e.wantInvalidToken(), 0)

	e.iss.SetFault("", e.iss.IntrospectionURL)
	ixCheck(t, e, ixOpaque(t, e), e.wantOK(), 1)
	ixCheck(t, e, e.tok(t, authtest.WrongIssuer()), e.wantInvalidToken(), 1)

	// The endpoint failing affects only introspected tokens.
	e.iss.SetFault("server-error", e.iss.IntrospectionURL)
	ixCheck(t, e, e.tok(t), e.wantOK(), 0)
	ixCheck(t, e, ixOpaque(t, e), e.wantUnavailable(), 1)
}
