package devas_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

// TestCodeFlow runs authorization code + PKCE by hand and checks the
// redirect, the token response and every access token claim.
func TestCodeFlow(t *testing.T) {
	e := start(t, nil)
	resp, _ := e.authorize(authParams())
	got := e.redirected(resp, redirectURI)
	if got.Get("state") != "xyz" || got.Get("iss") != e.issuer || got.Get("code") == "" {
		t.Fatalf("redirect query = %v, want code, state xyz, iss %s", got, e.issuer)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("authorize Cache-Control = %q, want no-store", cc)
	}

	tr := e.token(codeForm(got.Get("code")), nil)
	if tr.Status != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("token: status %d, error %q %q", tr.Status, tr.Error, tr.Description)
	}
	if tr.TokenType != "Bearer" || tr.ExpiresIn != 3600 || tr.Scope != "tools:read" || tr.RefreshToken != "" {
		t.Errorf("token response = %+v, want Bearer, 3600, tools:read, no refresh token", tr)
	}

	c, h := e.decode(tr.AccessToken)
	if h.ExtraHeaders["typ"] != "at+jwt" || h.KeyID != e.as.PublicKeys()[0].KeyID || h.Algorithm != "ES256" {
		t.Errorf("header = typ %v kid %q alg %q, want at+jwt, %q, ES256", h.ExtraHeaders["typ"], h.KeyID, h.Algorithm, e.as.PublicKeys()[0].KeyID)
	}
	want := atClaims{
		Issuer: e.issuer, Subject: "dev-user", Audience: resource, ClientID: clientID,
		Scope: "tools:read", Tenant: "tenant-a", ID: c.ID,
		IssuedAt: t0.Unix(), NotBefore: t0.Unix(), Expiry: t0.Add(time.Hour).Unix(),
	}
	if c != want || c.ID == "" {
		t.Errorf("claims:\n got %+v\nwant %+v", c, want)
	}
}

// TestLoopbackAnyPort: a registered http://127.0.0.1/callback accepts any
// port (RFC 8252 §7.3), and the redirect goes to the requested URI.
func TestLoopbackAnyPort(t *testing.T) {
	e := start(t, nil)
	q := authParams()
	q.Set("redirect_uri", "http://127.0.0.1:53123/callback")
	code := e.code(q)
	f := codeForm(code)
	f.Set("redirect_uri", "http://127.0.0.1:53123/callback")
	if tr := e.token(f, nil); tr.Status != http.StatusOK {
		t.Fatalf("token: %d %s", tr.Status, tr.Error)
	}
}

// TestAuthorizeErrorPage: errors before a valid redirect_uri is known are
// shown, never redirected.
func TestAuthorizeErrorPage(t *testing.T) {
	e := start(t, nil)
	tests := []struct {
		name     string
		mod      func(url.Values)
		wantCode string
	}{
		{name: "missing client_id", mod: func(q url.Values) { q.Del("client_id") }, wantCode: "invalid_request"},
		{name: "unknown client", mod: func(q url.Values) { q.Set("client_id", "nobody") }, wantCode: "invalid_client"},
		{name: "repeated client_id", mod: func(q url.Values) { q.Add("client_id", clientID) }, wantCode: "invalid_request"},
		{name: "missing redirect_uri", mod: func(q url.Values) { q.Del("redirect_uri") }, wantCode: "invalid_request"},
		{name: "wrong redirect_uri", mod: func(q url.Values) { q.Set("redirect_uri", "https://evil.example/callback") }, wantCode: "invalid_request"},
		{name: "redirect path differs", mod: func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1/other") }, wantCode: "invalid_request"},
		{name: "localhost not 127.0.0.1", mod: func(q url.Values) { q.Set("redirect_uri", "http://localhost/callback") }, wantCode: "invalid_request"},
		{name: "query too large", mod: func(q url.Values) { q.Set("junk", strings.Repeat("a", 20000)) }, wantCode: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authParams()
			tt.mod(q)
			req, _ := http.NewRequest(http.MethodGet, e.issuer+"/authorize?"+q.Encode(), nil)
			req.Header.Set("Accept", "application/json")
			resp, err := e.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q; want 400 and no redirect", resp.StatusCode, resp.Header.Get("Location"))
			}
			html, body := e.authorize(q)
			if html.StatusCode != http.StatusBadRequest || !strings.Contains(body, tt.wantCode) ||
				html.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("html page: status %d, XFO %q, body has %s: %v", html.StatusCode,
					html.Header.Get("X-Frame-Options"), tt.wantCode, strings.Contains(body, tt.wantCode))
			}
		})
	}
}

// TestAuthorizeErrorRedirect: once client and redirect_uri are verified,
// errors are redirected with error, state and iss.
func TestAuthorizeErrorRedirect(t *testing.T) {
	e := start(t, nil)
	tests := []struct {
		name      string
		mod       func(url.Values)
		wantError string
	}{
		{name: "response_type token", mod: func(q url.Values) { q.Set("response_type", "token") }, wantError: "unsupported_response_type"},
		{name: "missing response_type", mod: func(q url.Values) { q.Del("response_type") }, wantError: "invalid_request"},
		{name: "response_mode fragment", mod: func(q url.Values) { q.Set("response_mode", "fragment") }, wantError: "invalid_request"},
		{name: "missing PKCE", mod: func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, wantError: "invalid_request"},
		{name: "plain PKCE", mod: func(q url.Values) { q.Set("code_challenge", verifier); q.Set("code_challenge_method", "plain") }, wantError: "invalid_request"},
		{name: "missing method (plain by default)", mod: func(q url.Values) { q.Del("code_challenge_method") }, wantError: "invalid_request"},
		{name: "malformed challenge", mod: func(q url.Values) { q.Set("code_challenge", "short") }, wantError: "invalid_request"},
		{name: "missing resource", mod: func(q url.Values) { q.Del("resource") }, wantError: "invalid_target"},
		{name: "unknown resource", mod: func(q url.Values) { q.Set("resource", "http://127.0.0.1:8080/other") }, wantError: "invalid_target"},
		{name: "resource with trailing slash", mod: func(q url.Values) { q.Set("resource", resource+"/") }, wantError: "invalid_target"},
		{name: "two resources", mod: func(q url.Values) { q.Add("resource", resource) }, wantError: "invalid_target"},
		{name: "unknown scope", mod: func(q url.Values) { q.Set("scope", "tools:read admin") }, wantError: "invalid_scope"},
		{name: "offline_access without refresh tokens", mod: func(q url.Values) { q.Set("scope", "offline_access") }, wantError: "invalid_scope"},
		{name: "malformed scope", mod: func(q url.Values) { q.Set("scope", "tools:read  tools:write") }, wantError: "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authParams()
			tt.mod(q)
			resp, _ := e.authorize(q)
			got := e.redirected(resp, redirectURI)
			if got.Get("error") != tt.wantError || got.Get("state") != "xyz" || got.Get("iss") != e.issuer || got.Get("code") != "" {
				t.Errorf("redirect query = %v, want error %s, state xyz, iss, no code", got, tt.wantError)
			}
		})
	}
}

// TestTokenErrors drives every token endpoint failure.
func TestTokenErrors(t *testing.T) {
	other := publicClient()
	other.ClientID = "other-client"
	e := start(t, func(c *devas.Config) {
		c.Clients = append(c.Clients, other)
		c.Resources = append(c.Resources, "http://127.0.0.1:8080/second")
	})
	tests := []struct {
		name       string
		mod        func(f url.Values)
		before     func(e *env, f url.Values)
		auth       func(*http.Request)
		wantStatus int
		wantError  string
	}{
		{name: "wrong verifier", mod: func(f url.Values) { f.Set("code_verifier", strings.Repeat("a", 43)) }, wantError: "invalid_grant"},
		{name: "short verifier", mod: func(f url.Values) { f.Set("code_verifier", "abc") }, wantError: "invalid_grant"},
		{name: "missing verifier", mod: func(f url.Values) { f.Del("code_verifier") }, wantError: "invalid_request"},
		{name: "wrong redirect_uri", mod: func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1/other") }, wantError: "invalid_grant"},
		{name: "missing redirect_uri", mod: func(f url.Values) { f.Del("redirect_uri") }, wantError: "invalid_request"},
		{name: "wrong client", mod: func(f url.Values) { f.Set("client_id", "other-client") }, wantError: "invalid_grant"},
		{name: "other resource", mod: func(f url.Values) { f.Set("resource", "http://127.0.0.1:8080/second") }, wantError: "invalid_target"},
		{name: "unknown code", mod: func(f url.Values) { f.Set("code", "nope") }, wantError: "invalid_grant"},
		{name: "reused code", before: func(e *env, f url.Values) { e.token(f, nil) }, wantError: "invalid_grant"},
		{name: "expired code", before: func(e *env, _ url.Values) { e.clock.Advance(time.Minute) }, wantError: "invalid_grant"},
		{name: "missing grant_type", mod: func(f url.Values) { f.Del("grant_type") }, wantError: "invalid_request"},
		{name: "password grant", mod: func(f url.Values) { f.Set("grant_type", "password") }, wantError: "unsupported_grant_type"},
		{name: "refresh grant when off", mod: func(f url.Values) { f.Set("grant_type", "refresh_token") }, wantError: "unsupported_grant_type"},
		{name: "unknown client", mod: func(f url.Values) { f.Set("client_id", "nobody") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "no client_id", mod: func(f url.Values) { f.Del("client_id") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "public client with secret", mod: func(f url.Values) { f.Set("client_secret", "s") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "basic id differs from body", auth: func(r *http.Request) { r.SetBasicAuth("other-client", "") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "bearer authorization header", auth: func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "repeated code", mod: func(f url.Values) { f.Add("code", "x") }, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := codeForm(e.code(authParams()))
			if tt.before != nil {
				tt.before(e, f)
			}
			if tt.mod != nil {
				tt.mod(f)
			}
			tr := e.token(f, tt.auth)
			want := tt.wantStatus
			if want == 0 {
				want = http.StatusBadRequest
			}
			if tr.Status != want || tr.Error != tt.wantError || tr.AccessToken != "" {
				t.Errorf("got %d %q (%s), want %d %q", tr.Status, tr.Error, tr.Description, want, tt.wantError)
			}
			if want == 401 && tt.auth != nil && tr.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 after an Authorization header has no WWW-Authenticate")
			}
		})
	}
}

// TestCodeSpentOnFailure: a failed exchange spends the code, so the
// legitimate request that follows fails too.
func TestCodeSpentOnFailure(t *testing.T) {
	e := start(t, nil)
	f := codeForm(e.code(authParams()))
	bad := codeForm(f.Get("code"))
	bad.Set("code_verifier", strings.Repeat("b", 43))
	if tr := e.token(bad, nil); tr.Error != "invalid_grant" {
		t.Fatalf("bad verifier: %q", tr.Error)
	}
	if tr := e.token(f, nil); tr.Error != "invalid_grant" {
		t.Fatalf("after a failed attempt: %q, want invalid_grant", tr.Error)
	}
}

// TestTokenEndpointRequestShape: method, media type and size bounds.
func TestTokenEndpointRequestShape(t *testing.T) {
	e := start(t, nil)
	resp, _ := e.get(e.issuer + "/token")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /token = %d, want 405", resp.StatusCode)
	}
	for name, tc := range map[string]struct{ ct, body string }{
		"json body":  {"application/json", `{"grant_type":"authorization_code"}`},
		"huge body":  {"application/x-www-form-urlencoded", "grant_type=" + strings.Repeat("a", 20000)},
		"bad escape": {"application/x-www-form-urlencoded", "grant_type=%zz"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := e.hc.Post(e.issuer+"/token", tc.ct, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
		})
	}
}

// TestPublicClientBasicAuth: x/oauth2 (as the MCP go-sdk uses it for CIMD
// clients) first sends a public client's id as the Basic user name with
// an empty password; that is accepted.
func TestPublicClientBasicAuth(t *testing.T) {
	e := start(t, nil)
	f := codeForm(e.code(authParams()))
	f.Del("client_id")
	tr := e.token(f, func(r *http.Request) { r.SetBasicAuth(url.QueryEscape(clientID), "") })
	if tr.Status != http.StatusOK {
		t.Fatalf("token: %d %s", tr.Status, tr.Error)
	}
}

// TestUnsupportedClientAuthMethod: a client whose token endpoint method
// this server does not implement gets unauthorized_client at /authorize.
func TestUnsupportedClientAuthMethod(t *testing.T) {
	c := publicClient()
	c.TokenEndpointAuthMethod = "private_key_jwt"
	c.JWKSURI = "https://client.example/jwks.json"
	e := start(t, func(cfg *devas.Config) { cfg.Clients = []cimd.Client{c} })
	resp, _ := e.authorize(authParams())
	if got := e.redirected(resp, redirectURI); got.Get("error") != "unauthorized_client" {
		t.Fatalf("error = %q, want unauthorized_client", got.Get("error"))
	}
}

// TestStaticClientDefaults: a pre-registered client with a secret and no
// explicit method authenticates with client_secret_basic, and a redirect
// URI with a query keeps it byte for byte.
func TestStaticClientDefaults(t *testing.T) {
	const cb = "http://127.0.0.1/cb?app=one"
	c := cimd.Client{Document: cimd.Document{ClientID: "conf", RedirectURIs: []string{cb}}}
	c.SetSecret("s3cret")
	e := start(t, func(cfg *devas.Config) { cfg.Clients = []cimd.Client{c} })
	q := authParams()
	q.Set("client_id", "conf")
	q.Set("redirect_uri", cb)
	resp, _ := e.authorize(q)
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, cb+"&") {
		t.Fatalf("Location = %q, want the registered URI with its query, then &", loc)
	}
	u, _ := url.Parse(loc)
	if u.Query().Get("code") == "" {
		t.Fatalf("no code: %s", loc)
	}
	f := codeForm(u.Query().Get("code"))
	f.Del("client_id")
	f.Set("redirect_uri", cb)
	if tr := e.token(f, func(r *http.Request) { r.SetBasicAuth("conf", "s3cret") }); tr.Status != http.StatusOK {
		t.Errorf("client_secret_basic: %d %q (%s)", tr.Status, tr.Error, tr.Description)
	}
}

// TestMethods: endpoints refuse methods they do not serve.
func TestMethods(t *testing.T) {
	e := start(t, nil)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPut, "/authorize", http.StatusMethodNotAllowed},
		{http.MethodPost, "/jwks", http.StatusMethodNotAllowed},
		{http.MethodPost, "/.well-known/oauth-authorization-server", http.StatusMethodNotAllowed},
		{http.MethodHead, "/.well-known/oauth-authorization-server", http.StatusOK},
		{http.MethodGet, "/register", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, e.issuer+tc.path, nil)
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}
