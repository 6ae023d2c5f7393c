package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/client"
	"golang.org/x/oauth2"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/proxy"
)

// issEnv is an authtest issuer (pinned clock, JWKS, RFC 7662
// introspection, opaque tokens) and the proxy, configured from YAML, in
// front of a raw upstream that records the subject of each assertion it
// receives.
type issEnv struct {
	iss      *authtest.Issuer
	px       *proxy.Proxy
	resource string
	mu       sync.Mutex
	subjects []string
}

// newIssEnv builds the proxy from the YAML that yaml returns for the
// proxy's resource, the upstream URL and the issuer (env gives the
// environment variables the file names).
func newIssEnv(t *testing.T, yaml func(resource, upstream string, iss *authtest.Issuer) string, env map[string]string) (*issEnv, error) {
	t.Helper()
	pxTS := httptest.NewUnstartedServer(nil)
	e := &issEnv{resource: "http://" + pxTS.Listener.Addr().String() + "/mcp"}
	e.iss = authtest.NewIssuer(t, authtest.IssuerConfig{Audience: e.resource, IntrospectionSecret: testIntrospectionSecret})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sub := "(none)"
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if j, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256}); err == nil {
				var c jwt.Claims
				if j.UnsafeClaimsWithoutVerification(&c) == nil { // the test inspects; the go-sdk upstreams verify
					sub = c.Subject
				}
			}
		}
		e.mu.Lock()
		e.subjects = append(e.subjects, sub)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	t.Cleanup(up.Close)
	cfg, err := proxy.Parse("test.yaml", []byte(yaml(e.resource, up.URL+"/mcp", e.iss)), func(k string) string { return env[k] })
	if err != nil {
		pxTS.Close()
		return nil, err
	}
	cfg.Now = e.iss.Now
	px, err := proxy.New(cfg)
	if err != nil {
		pxTS.Close()
		return nil, err
	}
	t.Cleanup(func() { px.Close() })
	e.px = px
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	return e, nil
}

// call sends one tools/call with the Authorization value authz and
// returns the status and the subject the upstream saw ("" if none).
func (e *issEnv) call(t *testing.T, authz string) (int, string) {
	t.Helper()
	e.mu.Lock()
	n := len(e.subjects)
	e.mu.Unlock()
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`, http.Header{"Authorization": {authz}})
	readAll(t, resp)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.subjects) > n {
		return resp.StatusCode, e.subjects[n]
	}
	return resp.StatusCode, ""
}

const testIntrospectionSecret = "introspection-secret-of-the-proxy"

// introspectionYAML is a route trusting iss with the settings of its
// issuers entry.
func introspectionYAML(settings string) func(resource, upstream string, iss *authtest.Issuer) string {
	return func(resource, upstream string, iss *authtest.Issuer) string {
		id := iss.IntrospectionClientID
		return fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%q]
    scopes: [mcp:tools]
issuers:
  %q:
%s`, resource, upstream, iss.URL, iss.URL, strings.NewReplacer("JWKS_URL", iss.JWKSURL, "CLIENT_ID", id, "INTROSPECTION_URL", iss.IntrospectionURL).Replace(settings))
	}
}

// TestIssuerSettings: the issuers section of the file: introspection of
// opaque tokens beside local JWT validation (hybrid: a JWT of the issuer
// is never introspected, even when it fails), a fixed JWKS URL with
// discovery broken, and an opaque-only issuer.
func TestIssuerSettings(t *testing.T) {
	const hybrid = `    introspection:
      client_id: CLIENT_ID
      client_secret_env: INTROSPECTION_SECRET
`
	type call struct {
		name      string
		token     func(e *issEnv) string
		status    int
		sub       string
		introCall int64
	}
	opaque := func(e *issEnv) string {
		return e.iss.Token(t, authtest.Token{Opaque: true, Scopes: []string{"mcp:tools"}, Subject: "opaque-user"})
	}
	jwtTok := func(e *issEnv) string {
		return e.iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Subject: "jwt-user"})
	}
	otherAud := func(e *issEnv) string {
		return e.iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Audience: []string{"https://other.example/mcp"}})
	}
	unknown := func(*issEnv) string { return "opaque-unknown-token" }
	tests := []struct {
		name       string
		settings   string
		noDiscover bool // the issuer's metadata answers 500
		calls      []call
	}{
		{"hybrid", hybrid, false, []call{
			{"opaque token introspected", opaque, 200, "opaque-user", 1},
			{"jwt validated locally", jwtTok, 200, "jwt-user", 0},
			{"failing jwt never introspected", otherAud, 401, "", 0},
			{"unknown opaque token", unknown, 401, "", 1},
		}},
		{"jwks_url without discovery", "    jwks_url: JWKS_URL\n", true, []call{
			{"jwt", jwtTok, 200, "jwt-user", 0},
			{"opaque refused, no introspection", opaque, 401, "", 0},
		}},
		{"opaque_only", "    opaque_only: true\n" + hybrid + "      endpoint: INTROSPECTION_URL\n", true, []call{
			{"opaque token", opaque, 200, "opaque-user", 1},
			{"jwt naming it refused", jwtTok, 401, "", 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := newIssEnv(t, func(resource, upstream string, iss *authtest.Issuer) string {
				if tt.noDiscover {
					iss.SetFault("server-error", iss.MetadataURLs...)
				}
				return introspectionYAML(tt.settings)(resource, upstream, iss)
			}, map[string]string{"INTROSPECTION_SECRET": testIntrospectionSecret})
			if err != nil {
				t.Fatalf("proxy: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.px.WaitReady(ctx); err != nil {
				t.Fatalf("WaitReady: %v", err)
			}
			for _, c := range tt.calls {
				before := e.iss.Requests(e.iss.IntrospectionURL)
				status, sub := e.call(t, "Bearer "+c.token(e))
				if status != c.status || sub != c.sub {
					t.Errorf("%s: status %d, upstream subject %q; want %d, %q", c.name, status, sub, c.status, c.sub)
				}
				if n := e.iss.Requests(e.iss.IntrospectionURL) - before; n != c.introCall {
					t.Errorf("%s: %d introspection calls, want %d", c.name, n, c.introCall)
				}
			}
		})
	}
}

// TestIssuerConfigErrors: mistakes in the issuers section, the
// validation options and the DPoP proof settings are refused by New (or
// Parse), naming the key and the fix.
func TestIssuerConfigErrors(t *testing.T) {
	const route = `routes:
  - resource: http://127.0.0.1:1/mcp
    upstream: http://127.0.0.1:2/mcp
    issuers: ["http://127.0.0.1:3", "http://127.0.0.1:4"]
`
	env := map[string]string{"S": "secret", "NONCE": "too short"}
	tests := []struct{ name, yaml, want string }{
		{"issuer of no route", route + "issuers:\n  \"http://127.0.0.1:5\": {jwks_url: \"http://127.0.0.1:5/jwks\"}\n",
			`issuers[http://127.0.0.1:5]: no route lists this issuer`},
		{"jwks_url not https", route + "issuers:\n  \"http://127.0.0.1:3\": {jwks_url: \"http://keys.example.com/jwks\"}\n",
			`issuers[http://127.0.0.1:3].jwks_url "http://keys.example.com/jwks": must be https`},
		{"opaque_only without introspection", route + "issuers:\n  \"http://127.0.0.1:3\": {opaque_only: true}\n",
			`issuers[http://127.0.0.1:3].opaque_only: its tokens can only be introspected`},
		{"endpoint without client", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {endpoint: \"http://127.0.0.1:3/i\"}}\n",
			`issuers[http://127.0.0.1:3].introspection: client_id is required`},
		{"no secret", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {client_id: rs}}\n",
			`client_secret_basic needs a client secret`},
		{"bad auth method", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {client_id: rs, auth_method: tls, client_secret_env: S}}\n",
			`introspection.auth_method "tls": want client_secret_basic, client_secret_post or private_key_jwt`},
		{"private_key_jwt without key", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {client_id: rs, auth_method: private_key_jwt}}\n",
			`private_key_jwt needs private_key_file`},
		{"two introspecting issuers", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {client_id: rs, client_secret_env: S}}\n  \"http://127.0.0.1:4\": {introspection: {client_id: rs, client_secret_env: S}}\n",
			`all have introspection; at most one may`},
		{"inline introspection secret", route + "issuers:\n  \"http://127.0.0.1:3\": {introspection: {client_id: rs, client_secret: x}}\n",
			`client_secret: secrets are never inline`},
		{"short nonce secret", strings.Replace(route, "    issuers:", "    dpop: required\n    dpop_proof: {nonce_secret_env: NONCE}\n    issuers:", 1),
			`routes[0].dpop_proof.nonce_secret: 9 bytes; want at least 32`},
		{"unknown validation key", strings.Replace(route, "    issuers:", "    validation: {max_lifetime: 1m}\n    issuers:", 1),
			`routes[0].validation.max_lifetime: unknown key`},
		{"tls cert without key", "tls: {cert_file: c.pem}\n" + route, `tls: cert_file and key_file go together`},
		{"dev_as off loopback", "dev_as: 0.0.0.0:9000\n" + route, `dev_as "0.0.0.0:9000": must be a loopback host:port`},
		{"dev_as without port", "dev_as: 127.0.0.1\n" + route, `dev_as "127.0.0.1": must be a loopback host:port`},
		{"pins accepted without tools", strings.Replace(route, "    issuers:", "    pins: {accepted: {t: "+strings.Repeat("a", 64)+"}}\n    issuers:", 1),
			`routes[0].pins.accepted needs pins.tools: true`},
		{"pins accepted not a digest", strings.Replace(route, "    issuers:", "    pins: {tools: true, accepted: {t: ABC}}\n    issuers:", 1),
			`Pins.Accepted[t] is not a lower-case hex SHA-256`},
		{"hmac algorithm", strings.Replace(route, "    issuers:", "    validation: {algorithms: [HS256]}\n    issuers:", 1),
			`routes[0]: mcpguard: invalid config: Validate: validate: invalid config: algorithm "HS256" is not an allowed asymmetric JWS algorithm`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := proxy.Parse("t.yaml", []byte(tt.yaml), func(k string) string { return env[k] })
			if err == nil {
				var px *proxy.Proxy
				px, err = proxy.New(cfg)
				if px != nil {
					px.Close()
				}
			}
			if !errors.Is(err, proxy.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant ErrConfig containing %q", err, tt.want)
			}
		})
	}
}

// TestValidationOptions: the validation and policy options of the file
// reach the validator and the middleware.
func TestValidationOptions(t *testing.T) {
	yaml := func(extra string) func(resource, upstream string, iss *authtest.Issuer) string {
		return func(resource, upstream string, iss *authtest.Issuer) string {
			return fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%q]
    scopes: [mcp:tools]
%s`, resource, upstream, iss.URL, extra)
		}
	}
	tests := []struct {
		name   string
		extra  string
		token  func(iss *authtest.Issuer) string
		status int
	}{
		{"max_token_lifetime refuses a day-long token", "    validation: {max_token_lifetime: 1h}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Claims: map[string]any{"exp": iss.Now().Add(24 * time.Hour).Unix()}})
		}, 401},
		{"max_token_lifetime passes a short one", "    validation: {max_token_lifetime: 1h}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}})
		}, 200},
		{"allow_missing_subject", "    validation: {allow_missing_subject: true}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Claims: map[string]any{"sub": nil}})
		}, 200},
		{"missing subject refused by default", "", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Claims: map[string]any{"sub": nil}})
		}, 401},
		{"reject_multiple_audiences", "    validation: {reject_multiple_audiences: true}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Audience: []string{iss.Audience, "https://other.example"}})
		}, 401},
		{"algorithms excludes the issuer's", "    validation: {algorithms: [EdDSA]}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}})
		}, 401},
		{"scope_implies", "    scope_implies: {mcp:admin: [mcp:tools]}\n", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:admin"}})
		}, 200},
		{"no implication by default", "", func(iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Scopes: []string{"mcp:admin"}})
		}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := newIssEnv(t, yaml(tt.extra), nil)
			if err != nil {
				t.Fatalf("proxy: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.px.WaitReady(ctx); err != nil {
				t.Fatalf("WaitReady: %v", err)
			}
			if status, _ := e.call(t, "Bearer "+tt.token(e.iss)); status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
		})
	}
}

// TestDPoPNonce: with a nonce secret, the proxy requires server nonces
// (RFC 9449 §9): the first DPoP request gets 401 use_dpop_nonce with a
// DPoP-Nonce, and the mcpguard client retries with it and passes; the
// nonce secret comes from the environment.
func TestDPoPNonce(t *testing.T) {
	e, err := newIssEnv(t, func(resource, upstream string, iss *authtest.Issuer) string {
		return fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%q]
    dpop: required
    dpop_proof: {nonce_secret_env: DPOP_NONCE_SECRET, algorithms: [ES256]}
`, resource, upstream, iss.URL)
	}, map[string]string{"DPOP_NONCE_SECRET": strings.Repeat("n0nce-secret-", 4)})
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	key, err := client.NewDPoPKey(nil, e.iss.Now)
	if err != nil {
		t.Fatal(err)
	}
	tok := e.iss.Token(t, authtest.Token{Subject: "dpop-user", Claims: map[string]any{"cnf": map[string]any{"jkt": key.Thumbprint()}}})

	// Without a nonce: 401 use_dpop_nonce.
	proof, err := key.Proof("POST", e.resource, tok)
	if err != nil {
		t.Fatal(err)
	}
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`,
		http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {proof}})
	readAll(t, resp)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `error="use_dpop_nonce"`) || resp.Header.Get("DPoP-Nonce") == "" {
		t.Fatalf("without a nonce: %d %q DPoP-Nonce %q; want 401 use_dpop_nonce with a nonce", resp.StatusCode, ch, resp.Header.Get("DPoP-Nonce"))
	}

	// The client learns the nonce and retries.
	tr, err := client.New(client.Config{
		Resource:    e.resource,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "DPoP"}),
		DPoP:        key,
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", e.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	e.mu.Lock()
	last := e.subjects[len(e.subjects)-1]
	e.mu.Unlock()
	if resp.StatusCode != 200 || last != "dpop-user" {
		t.Errorf("with the nonce: %d, upstream saw %q; want 200, dpop-user", resp.StatusCode, last)
	}
}

// TestStepUpBoundAndReplay: through the proxy, a principal that keeps
// calling a tool its token lacks the scope for gets step_up.limit
// insufficient_scope challenges, then the terminal 403 (docs/answers.md row 15),
// and the upstream never sees the call; a DPoP proof sent twice is
// refused the second time.
func TestStepUpBoundAndReplay(t *testing.T) {
	e, err := newIssEnv(t, func(resource, upstream string, iss *authtest.Issuer) string {
		return fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%q]
    scopes: [mcp:tools]
    dpop: allowed
    step_up: {limit: 2, window: 10m}
    operations:
      tools: {admin_only: [mcp:admin]}
`, resource, upstream, iss.URL)
	}, nil)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	tok := "Bearer " + e.iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Subject: "bob"})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin_only"}}`
	for i, want := range []string{"challenge", "challenge", "terminal", "terminal"} {
		resp := do(t, "POST", e.resource, body, http.Header{"Authorization": {tok}})
		readAll(t, resp)
		ch := resp.Header.Get("WWW-Authenticate")
		step := strings.Contains(ch, `error="insufficient_scope"`) && strings.Contains(ch, `scope="mcp:tools mcp:admin"`)
		terminal := !strings.Contains(ch, "error=") && !strings.Contains(ch, "scope=") && strings.Contains(ch, "resource_metadata=")
		if resp.StatusCode != 403 || (want == "challenge") != step || (want == "terminal") != terminal {
			t.Errorf("call %d: %d %q, want 403 %s", i+1, resp.StatusCode, ch, want)
		}
	}
	e.mu.Lock()
	if len(e.subjects) != 0 {
		t.Errorf("the upstream saw %v", e.subjects)
	}
	e.mu.Unlock()

	key, err := client.NewDPoPKey(nil, e.iss.Now)
	if err != nil {
		t.Fatal(err)
	}
	dtok := e.iss.Token(t, authtest.Token{Scopes: []string{"mcp:tools"}, Subject: "dpop-user", Claims: map[string]any{"cnf": map[string]any{"jkt": key.Thumbprint()}}})
	proof, err := key.Proof("POST", e.resource, dtok)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{200, 401} {
		resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`,
			http.Header{"Authorization": {"DPoP " + dtok}, "Dpop": {proof}})
		readAll(t, resp)
		if resp.StatusCode != want {
			t.Errorf("proof use %d: %d %q, want %d", i+1, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
		}
	}
}
