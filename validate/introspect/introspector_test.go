package introspect_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

func TestNewConfig(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	base := func(mut func(*introspect.Config)) introspect.Config {
		c := introspect.Config{Issuer: testIss, Endpoint: "https://as.example.com/introspect", Audiences: []string{testAud}, ClientID: testClient, ClientSecret: testSecret}
		mut(&c)
		return c
	}
	tests := []struct {
		name    string
		cfg     introspect.Config
		wantErr error
	}{
		{name: "valid", cfg: base(func(*introspect.Config) {})},
		{name: "discovery", cfg: base(func(c *introspect.Config) { c.Endpoint = "" })},
		{name: "http loopback endpoint", cfg: base(func(c *introspect.Config) { c.Endpoint = "http://127.0.0.1:9/introspect" })},
		{name: "no issuer", cfg: base(func(c *introspect.Config) { c.Issuer = "" }), wantErr: introspect.ErrConfig},
		{name: "no audiences", cfg: base(func(c *introspect.Config) { c.Audiences = nil }), wantErr: introspect.ErrConfig},
		{name: "empty audience", cfg: base(func(c *introspect.Config) { c.Audiences = []string{testAud, ""} }), wantErr: introspect.ErrConfig},
		{name: "http endpoint", cfg: base(func(c *introspect.Config) { c.Endpoint = "http://as.example.com/introspect" }), wantErr: introspect.ErrConfig},
		{name: "endpoint with userinfo", cfg: base(func(c *introspect.Config) { c.Endpoint = "https://u:p@as.example.com/i" }), wantErr: introspect.ErrConfig},
		{name: "http issuer for discovery", cfg: base(func(c *introspect.Config) { c.Endpoint, c.Issuer = "", "http://as.example.com" }), wantErr: introspect.ErrConfig},
		{name: "negative timeout", cfg: base(func(c *introspect.Config) { c.Timeout = -1 }), wantErr: introspect.ErrConfig},
		{name: "negative max bytes", cfg: base(func(c *introspect.Config) { c.MaxBytes = -1 }), wantErr: introspect.ErrConfig},
		{name: "negative max token bytes", cfg: base(func(c *introspect.Config) { c.MaxTokenBytes = -1 }), wantErr: introspect.ErrConfig},
		{name: "negative max cache ttl", cfg: base(func(c *introspect.Config) { c.MaxCacheTTL = -1 }), wantErr: introspect.ErrConfig},
		{name: "negative inactive ttl", cfg: base(func(c *introspect.Config) { c.InactiveCacheTTL = -1 }), wantErr: introspect.ErrConfig},
		{name: "negative cache size disables", cfg: base(func(c *introspect.Config) { c.CacheSize = -1 })},
		{name: "negative leeway means none", cfg: base(func(c *introspect.Config) { c.Leeway = -1 })},
		{name: "basic without secret", cfg: base(func(c *introspect.Config) { c.ClientSecret = "" }), wantErr: introspect.ErrConfig},
		{name: "post without client", cfg: base(func(c *introspect.Config) { c.AuthMethod, c.ClientID = "client_secret_post", "" }), wantErr: introspect.ErrConfig},
		{name: "private_key_jwt", cfg: base(func(c *introspect.Config) { c.AuthMethod, c.PrivateKey = "private_key_jwt", ec })},
		{name: "private_key_jwt without key", cfg: base(func(c *introspect.Config) { c.AuthMethod = "private_key_jwt" }), wantErr: introspect.ErrConfig},
		{name: "private_key_jwt wrong alg", cfg: base(func(c *introspect.Config) {
			c.AuthMethod, c.PrivateKey, c.Algorithm = "private_key_jwt", ec, jose.RS256
		}), wantErr: introspect.ErrConfig},
		{name: "private_key_jwt hmac", cfg: base(func(c *introspect.Config) {
			c.AuthMethod, c.PrivateKey, c.Algorithm = "private_key_jwt", ec, jose.HS256
		}), wantErr: introspect.ErrConfig},
		{name: "private_key_jwt short rsa", cfg: base(func(c *introspect.Config) { c.AuthMethod, c.PrivateKey = "private_key_jwt", small }), wantErr: introspect.ErrConfig},
		{name: "bearer", cfg: base(func(c *introspect.Config) {
			c.AuthMethod, c.TokenSource = "bearer", introspect.StaticToken(&oauth2.Token{AccessToken: "x"})
		})},
		{name: "bearer without token source", cfg: base(func(c *introspect.Config) { c.AuthMethod = "bearer" }), wantErr: introspect.ErrConfig},
		{name: "unknown auth method", cfg: base(func(c *introspect.Config) { c.AuthMethod = "tls_client_auth" }), wantErr: introspect.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := introspect.New(tt.cfg)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("New = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestResponse drives every response check from one table.
func TestResponse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		mut     func(*introspect.Config)
		wantErr error
	}{
		{name: "active", body: activeJSON()},
		{name: "minimal", body: `{"active":true,"aud":"` + testAud + `","exp":` + unix(time.Hour) + `,"sub":"a"}`},
		{name: "minimal without sub", body: `{"active":true,"aud":"` + testAud + `","exp":` + unix(time.Hour) + `}`, wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "minimal without sub allowed", body: `{"active":true,"aud":"` + testAud + `","exp":` + unix(time.Hour) + `}`, mut: allowMissingSub},
		{name: "whitespace", body: " {\n\"active\" : true ,\"aud\":\"" + testAud + "\", \"exp\":\t" + unix(time.Hour) + " ,\"sub\":\"a\"} \n"},
		{name: "malformed JSON", body: `{"active":true,`, wantErr: validate.Error{Reason: "malformed"}},
		{name: "empty body", body: ``, wantErr: validate.Error{Reason: "malformed"}},
		{name: "array", body: `[{"active":true}]`, wantErr: validate.Error{Reason: "malformed"}},
		{name: "trailing data", body: activeJSON() + `{}`, wantErr: validate.Error{Reason: "malformed"}},
		{name: "invalid UTF-8 raw", body: strings.Replace(activeJSON(), `"alice"`, "\"al\xffice\"", 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "missing active", body: activeJSON("active", nil), wantErr: validate.Error{Reason: "malformed"}},
		{name: "active string", body: activeJSON("active", "true"), wantErr: validate.Error{Reason: "malformed"}},
		{name: "active number", body: activeJSON("active", 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "active null", body: strings.Replace(activeJSON(), `"active":true`, `"active":null`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "inactive", body: `{"active":false}`, wantErr: validate.Error{Reason: "inactive"}},
		{name: "inactive with stale claims", body: activeJSON("active", false), wantErr: validate.Error{Reason: "inactive"}},
		{name: "duplicate active", body: `{"active":false,"active":true,"aud":"` + testAud + `","exp":` + unix(time.Hour) + `}`, wantErr: validate.Error{Reason: "malformed"}},
		{name: "duplicate exp", body: strings.Replace(activeJSON(), `"active":true`, `"active":true,"exp":99999999999`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "duplicate aud by case", body: strings.Replace(activeJSON(), `"active":true`, `"active":true,"AUD":"x"`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "duplicate unknown member", body: strings.Replace(activeJSON(), `"active":true`, `"active":true,"x":1,"X":2`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "other issuer", body: activeJSON("iss", "https://evil.example.com"), wantErr: validate.Error{Reason: "issuer"}},
		{name: "issuer differs by slash", body: activeJSON("iss", testIss+"/"), wantErr: validate.Error{Reason: "issuer"}},
		{name: "no issuer assumes configured", body: activeJSON("iss", nil)},
		{name: "issuer not a string", body: activeJSON("iss", 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "other resource", body: activeJSON("aud", "https://other.example.com/mcp"), wantErr: validate.Error{Reason: "audience"}},
		{name: "audience array", body: activeJSON("aud", []string{"https://other.example.com", testAud})},
		{name: "audience array without ours", body: activeJSON("aud", []string{"https://other.example.com"}), wantErr: validate.Error{Reason: "audience"}},
		{name: "audience with uppercase scheme and host", body: activeJSON("aud", "HTTPS://MCP.Example.COM/mcp")},
		{name: "audience with uppercase path", body: activeJSON("aud", "https://mcp.example.com/MCP"), wantErr: validate.Error{Reason: "audience"}},
		{name: "audience with userinfo", body: activeJSON("aud", "https://x@mcp.example.com/mcp"), wantErr: validate.Error{Reason: "audience"}},
		{name: "missing audience", body: activeJSON("aud", nil), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "empty audience array", body: activeJSON("aud", []string{}), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "empty audience string", body: activeJSON("aud", ""), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "audience number", body: activeJSON("aud", 5), wantErr: validate.Error{Reason: "malformed"}},
		{name: "audience mixed array", body: activeJSON("aud", []any{testAud, 5}), wantErr: validate.Error{Reason: "malformed"}},
		{name: "missing audience allowed", body: activeJSON("aud", nil), mut: allowMissingAud},
		{name: "wrong audience not allowed by relaxation", body: activeJSON("aud", "https://other.example.com"), mut: allowMissingAud, wantErr: validate.Error{Reason: "audience"}},
		{name: "missing exp", body: activeJSON("exp", nil), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "exp string", body: activeJSON("exp", "1767326645"), wantErr: validate.Error{Reason: "malformed"}},
		{name: "exp negative", body: activeJSON("exp", -1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "exp after year 9999", body: activeJSON("exp", 253402300800), wantErr: validate.Error{Reason: "malformed"}},
		{name: "exp huge", body: strings.Replace(activeJSON(), `"exp":`+unix(time.Hour), `"exp":1e400`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "exp fractional", body: activeJSON("exp", float64(testNow.Add(time.Hour).Unix())+0.5)},
		{name: "expired", body: activeJSON("exp", testNow.Add(-time.Hour).Unix()), wantErr: validate.Error{Reason: "expired"}},
		{name: "expired within leeway", body: activeJSON("exp", testNow.Add(-10*time.Second).Unix())},
		{name: "expired, no leeway", body: activeJSON("exp", testNow.Add(-10*time.Second).Unix()), mut: func(c *introspect.Config) { c.Leeway = -1 }, wantErr: validate.Error{Reason: "expired"}},
		{name: "exp now", body: activeJSON("exp", testNow.Unix()), mut: func(c *introspect.Config) { c.Leeway = -1 }, wantErr: validate.Error{Reason: "expired"}},
		{name: "not yet valid", body: activeJSON("nbf", testNow.Add(time.Minute).Unix()), wantErr: validate.Error{Reason: "not_yet_valid"}},
		{name: "nbf within leeway", body: activeJSON("nbf", testNow.Add(10*time.Second).Unix())},
		{name: "nbf string", body: activeJSON("nbf", "soon"), wantErr: validate.Error{Reason: "malformed"}},
		{name: "issued in the future", body: activeJSON("iat", testNow.Add(time.Minute).Unix()), wantErr: validate.Error{Reason: "issued_at"}},
		{name: "token_type DPoP", body: activeJSON("token_type", "DPoP"), wantErr: validate.Error{Reason: "type"}},
		{name: "token_type N_A", body: activeJSON("token_type", "N_A"), wantErr: validate.Error{Reason: "type"}},
		{name: "token_type refresh_token", body: activeJSON("token_type", "refresh_token"), wantErr: validate.Error{Reason: "type"}},
		{name: "token_type bearer lower case", body: activeJSON("token_type", "bearer")},
		{name: "token_type access_token", body: activeJSON("token_type", "ACCESS_TOKEN")},
		{name: "token_type absent", body: activeJSON("token_type", nil)},
		{name: "token_type number", body: activeJSON("token_type", 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "missing sub", body: activeJSON("sub", nil), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "empty sub", body: activeJSON("sub", ""), wantErr: validate.Error{Reason: "missing_claim"}},
		{name: "missing sub allowed", body: activeJSON("sub", nil), mut: allowMissingSub},
		{name: "cnf (sender-constrained)", body: activeJSON("cnf", map[string]string{"jkt": "abc"}), wantErr: validate.Error{Reason: "sender_constrained"}},
		{name: "cnf null", body: strings.Replace(activeJSON(), `"active":true`, `"active":true,"cnf":null`, 1), wantErr: validate.Error{Reason: "sender_constrained"}},
		{name: "cnf jkt allowed", body: activeJSON("cnf", map[string]string{"jkt": testJKT}), mut: allowCnf},
		{name: "cnf jkt with DPoP token_type allowed", body: activeJSON("cnf", map[string]string{"jkt": testJKT}, "token_type", "DPoP"), mut: allowCnf},
		{name: "token_type DPoP without cnf", body: activeJSON("token_type", "DPoP"), mut: allowCnf, wantErr: validate.Error{Reason: "type"}},
		{name: "cnf x5t#S256 refused even allowed", body: activeJSON("cnf", map[string]string{"x5t#S256": testJKT}), mut: allowCnf, wantErr: validate.Error{Reason: "sender_constrained"}},
		{name: "cnf jkt and x5t#S256 refused even allowed", body: activeJSON("cnf", map[string]string{"jkt": testJKT, "x5t#S256": testJKT}), mut: allowCnf, wantErr: validate.Error{Reason: "sender_constrained"}},
		{name: "cnf not an object", body: activeJSON("cnf", "abc"), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "cnf empty object", body: activeJSON("cnf", map[string]string{}), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "cnf jkt empty", body: activeJSON("cnf", map[string]string{"jkt": ""}), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "cnf jkt number", body: activeJSON("cnf", map[string]int{"jkt": 1}), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "cnf jkt padded", body: activeJSON("cnf", map[string]string{"jkt": testJKT + "="}), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "cnf jkt standard alphabet", body: activeJSON("cnf", map[string]string{"jkt": "ab+/"}), mut: allowCnf, wantErr: validate.Error{Reason: "malformed"}},
		{name: "scope array", body: activeJSON("scope", []string{"a"}), wantErr: validate.Error{Reason: "malformed"}},
		{name: "scope bad character", body: activeJSON("scope", "a\tb"), wantErr: validate.Error{Reason: "malformed"}},
		{name: "scope quote", body: activeJSON("scope", `a"b`), wantErr: validate.Error{Reason: "malformed"}},
		{name: "scope empty", body: activeJSON("scope", "")},
		{name: "sub number", body: activeJSON("sub", 7), wantErr: validate.Error{Reason: "malformed"}},
		{name: "client_id null", body: strings.Replace(activeJSON(), `"client_id":"client-1"`, `"client_id":null`, 1), wantErr: validate.Error{Reason: "malformed"}},
		{name: "jti object", body: activeJSON("jti", map[string]any{}), wantErr: validate.Error{Reason: "malformed"}},
		{name: "tenant not a string", body: activeJSON("tenant", 3), wantErr: validate.Error{Reason: "malformed"}},
		{name: "tenant ignored without TenantClaim", body: activeJSON("tenant", 3), mut: func(c *introspect.Config) { c.TenantClaim = "" }},
		{name: "deeply nested extension", body: strings.Replace(activeJSON(), `"active":true`, `"active":true,"x":`+strings.Repeat("[", 500)+strings.Repeat("]", 500), 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStub(t, jsonAnswer(tt.body))
			cfg := introspect.Config{Endpoint: s.URL(), TenantClaim: "tenant"}
			if tt.mut != nil {
				tt.mut(&cfg)
			}
			c, err := newIntro(t, cfg).Validate(t.Context(), testToken)
			checkErr(t, err, tt.wantErr)
			if err == nil && (c.Issuer != testIss || c.Expiry.IsZero()) {
				t.Errorf("claims = %+v, want issuer %q and an expiry", c, testIss)
			}
			if err != nil && c != nil {
				t.Errorf("claims = %+v with error", c)
			}
		})
	}
}

// testJKT is a well-formed RFC 7638 SHA-256 thumbprint (of no key in
// particular).
const testJKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"

func allowMissingSub(c *introspect.Config) { c.AllowMissingSubject = true }
func allowCnf(c *introspect.Config)        { c.AllowConfirmation = true }

func unix(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }

func allowMissingAud(c *introspect.Config) { c.AllowMissingAudience = true }

func TestClaims(t *testing.T) {
	s := newStub(t, jsonAnswer(activeJSON("ext", map[string]any{"n": 1})))
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), TenantClaim: "tenant"})
	c, err := in.Validate(t.Context(), testToken)
	if err != nil {
		t.Fatal(err)
	}
	want := validate.Claims{
		Issuer: testIss, Subject: "alice", ClientID: "client-1", ID: "jti-1", Tenant: "tenant-a",
		Audience: []string{testAud}, Scopes: []string{"mcp:tools", "notes:read"},
		Expiry: testNow.Add(time.Hour), NotBefore: testNow.Add(-time.Minute), IssuedAt: testNow.Add(-time.Minute),
	}
	got := *c
	if got.Issuer != want.Issuer || got.Subject != want.Subject || got.ClientID != want.ClientID || got.ID != want.ID ||
		got.Tenant != want.Tenant || !slices.Equal(got.Audience, want.Audience) || !slices.Equal(got.Scopes, want.Scopes) ||
		!got.Expiry.Equal(want.Expiry) || !got.NotBefore.Equal(want.NotBefore) || !got.IssuedAt.Equal(want.IssuedAt) || got.KeyID != "" {
		t.Errorf("claims:\n got %+v\nwant %+v", got, want)
	}
	var ext struct {
		Active bool `json:"active"`
		Ext    struct {
			N int `json:"n"` // Decode matches names case-sensitively
		} `json:"ext"`
	}
	if err := c.Decode(&ext); err != nil || !ext.Active || ext.Ext.N != 1 {
		t.Errorf("Decode = %v %+v, want the whole response", err, ext)
	}
}

func TestRequest(t *testing.T) {
	s := newStub(t, jsonAnswer(activeJSON()))
	in := newIntro(t, introspect.Config{Endpoint: s.URL()})
	if _, err := in.Validate(t.Context(), testToken); err != nil {
		t.Fatal(err)
	}
	form, _ := s.last()
	if form.Get("token") != testToken || form.Get("token_type_hint") != "access_token" || len(form) != 2 {
		t.Errorf("form = %v, want token and token_type_hint only", form)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accept != "application/json" || s.ctype != "application/x-www-form-urlencoded" || s.lastPath != "/introspect" {
		t.Errorf("Accept %q Content-Type %q path %q", s.accept, s.ctype, s.lastPath)
	}
}

// TestTokenInput: tokens that are refused before any request.
func TestTokenInput(t *testing.T) {
	s := newStub(t, jsonAnswer(activeJSON()))
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), MaxTokenBytes: 64})
	tests := []struct {
		name    string
		raw     string
		wantErr error
	}{
		{name: "empty", raw: "", wantErr: validate.Error{Reason: "malformed"}},
		{name: "space", raw: "a b", wantErr: validate.Error{Reason: "malformed"}},
		{name: "control", raw: "a\x00b", wantErr: validate.Error{Reason: "malformed"}},
		{name: "non-ASCII", raw: "tøken", wantErr: validate.Error{Reason: "malformed"}},
		{name: "too large", raw: strings.Repeat("a", 65), wantErr: validate.Error{Reason: "too_large"}},
		{name: "at the limit", raw: strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.calls.Load()
			_, err := in.Validate(t.Context(), tt.raw)
			checkErr(t, err, tt.wantErr)
			if got := s.calls.Load() - before; (err == nil) != (got == 1) {
				t.Errorf("endpoint calls = %d with err %v", got, err)
			}
		})
	}
}

// TestEndpointFailures: every failure to get an answer is
// ErrKeysUnavailable (503), never an accepted token, and 401/403 are also
// ErrClientAuth and logged at Error level.
func TestEndpointFailures(t *testing.T) {
	huge := `{"active":true,"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	tests := []struct {
		name       string
		h          http.HandlerFunc
		wantAlso   error
		wantLogErr bool
	}{
		{name: "500", h: answer(500, "application/json", `{}`), wantAlso: introspect.ErrEndpoint},
		{name: "502 html", h: answer(502, "text/html", `<html>`), wantAlso: introspect.ErrEndpoint},
		{name: "503", h: answer(503, "", ``), wantAlso: introspect.ErrEndpoint},
		{name: "429", h: answer(429, "application/json", `{}`), wantAlso: introspect.ErrEndpoint},
		{name: "404", h: answer(404, "text/plain", `not found`), wantAlso: introspect.ErrEndpoint},
		{name: "401", h: answer(401, "application/json", `{"error":"invalid_client"}`), wantAlso: introspect.ErrClientAuth, wantLogErr: true},
		{name: "403", h: answer(403, "application/json", `{}`), wantAlso: introspect.ErrClientAuth, wantLogErr: true},
		{name: "204", h: answer(204, "", ``), wantAlso: introspect.ErrEndpoint},
		{name: "wrong content type", h: answer(200, "text/html", activeJSON()), wantAlso: introspect.ErrEndpoint},
		{name: "no content type", h: func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte(activeJSON()))
		}, wantAlso: introspect.ErrEndpoint},
		{name: "huge body", h: jsonAnswer(huge), wantAlso: introspect.ErrEndpoint},
		{name: "redirect", h: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/other", http.StatusTemporaryRedirect)
		}, wantAlso: introspect.ErrEndpoint},
		{name: "connection reset", h: func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close()
		}, wantAlso: introspect.ErrEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStub(t, tt.h)
			var logs logBuffer
			in := newIntro(t, introspect.Config{Endpoint: s.URL(), Logger: logs.logger()})
			_, err := in.Validate(t.Context(), testToken)
			checkErr(t, err, validate.ErrKeysUnavailable)
			if !errors.Is(err, tt.wantAlso) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.wantAlso)
			}
			if got := strings.Contains(logs.String(), "level=ERROR"); got != tt.wantLogErr {
				t.Errorf("error logged = %v, want %v; log:\n%s", got, tt.wantLogErr, logs.String())
			}
			if strings.Contains(logs.String(), testToken) || strings.Contains(err.Error(), testToken) {
				t.Errorf("token leaked into log or error")
			}
		})
	}
}

// TestRedirectNotFollowed: neither the default client nor a caller's
// client that follows redirects sends the token on.
func TestRedirectNotFollowed(t *testing.T) {
	target := newStub(t, jsonAnswer(activeJSON()))
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, client := range []*http.Client{nil, {}} {
			s := newStub(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target.URL(), code) })
			in := newIntro(t, introspect.Config{Endpoint: s.URL(), HTTPClient: client})
			_, err := in.Validate(t.Context(), testToken)
			checkErr(t, err, validate.ErrKeysUnavailable)
			if n := target.calls.Load(); n != 0 {
				t.Fatalf("redirect %d followed (%d requests reached the target)", code, n)
			}
		}
	}
}

// TestHangingEndpoint: a hanging endpoint costs Config.Timeout, and a
// caller's shorter deadline less. The endpoint never answers, so each
// Validate can only end by a deadline; which one is told by the error and
// by a lower bound on the elapsed time (a timer never fires early), never
// by an upper bound on a wall clock that a loaded machine stretches.
func TestHangingEndpoint(t *testing.T) {
	release := make(chan struct{})
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	const timeout = 500 * time.Millisecond
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), Timeout: timeout})

	// No caller deadline: only Config.Timeout can end it.
	start := time.Now()
	_, err := in.Validate(t.Context(), testToken)
	elapsed := time.Since(start)
	checkErr(t, err, validate.ErrKeysUnavailable)
	t.Logf("hanging endpoint: Validate returned after %v (Timeout %v)", elapsed, timeout)
	if elapsed < timeout {
		t.Errorf("Validate returned after %v, before its Timeout %v", elapsed, timeout)
	}

	// A caller's deadline far shorter than a Timeout no run reaches: only
	// the caller's deadline can end it, and the error says so.
	in = newIntro(t, introspect.Config{Endpoint: s.URL(), Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = in.Validate(ctx, "opaque-token-2")
	checkErr(t, err, validate.ErrKeysUnavailable)
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() == nil {
		t.Errorf("err = %v (caller's context: %v), want it to wrap the caller's %v", err, ctx.Err(), context.DeadlineExceeded)
	}
}

// TestResponseConfirmation: with AllowConfirmation the returned Claims
// carry cnf.jkt; without it they never do (the response is refused).
func TestResponseConfirmation(t *testing.T) {
	s := newStub(t, jsonAnswer(activeJSON("cnf", map[string]string{"jkt": testJKT})))
	c, err := newIntro(t, introspect.Config{Endpoint: s.URL(), AllowConfirmation: true}).Validate(t.Context(), testToken)
	if err != nil {
		t.Fatal(err)
	}
	if c.Confirmation == nil || c.Confirmation.JKT != testJKT {
		t.Fatalf("Confirmation = %+v, want jkt %q", c.Confirmation, testJKT)
	}
	s = newStub(t, jsonAnswer(activeJSON()))
	c, err = newIntro(t, introspect.Config{Endpoint: s.URL(), AllowConfirmation: true}).Validate(t.Context(), testToken)
	if err != nil || c.Confirmation != nil {
		t.Fatalf("no cnf: Confirmation = %+v, err %v", c.Confirmation, err)
	}
}
