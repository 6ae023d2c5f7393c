package devas_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

// Fixtures.
const (
	resource    = "http://127.0.0.1:8080/mcp"
	clientID    = "dev-client"
	redirectURI = "http://127.0.0.1/callback"
	verifier    = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" // RFC 7636 appendix B
	challenge   = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a running devas Server on 127.0.0.1.
type env struct {
	t      *testing.T
	as     *devas.Server
	ts     *httptest.Server
	issuer string
	clock  *clock
	hc     *http.Client // does not follow redirects
}

// publicClient is the pre-registered public client most tests use.
func publicClient() cimd.Client {
	return cimd.Client{Document: cimd.Document{
		ClientID:                clientID,
		ClientName:              "Dev Client",
		RedirectURIs:            []string{redirectURI},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}}
}

// start runs a Server for cfg, filling Issuer, Now, Resources, Scopes,
// Clients and AutoApprove when unset (mod may change cfg first).
func start(t *testing.T, mod func(*devas.Config)) *env {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	e := &env{t: t, ts: ts, issuer: "http://" + ts.Listener.Addr().String(), clock: &clock{t: t0}}
	cfg := devas.Config{
		Issuer:      e.issuer,
		Resources:   []string{resource},
		Scopes:      []string{"tools:read", "tools:write"},
		Clients:     []cimd.Client{publicClient()},
		AutoApprove: true,
		Now:         e.clock.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	as, err := devas.New(cfg)
	if err != nil {
		ts.Close()
		t.Fatalf("New: %v", err)
	}
	e.as = as
	ts.Config.Handler = as
	ts.Start()
	t.Cleanup(ts.Close)
	e.hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// authParams are valid authorization request parameters for publicClient.
func authParams() url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"state":                 {"xyz"},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"resource":              {resource},
		"scope":                 {"tools:read"},
	}
}

// authorize sends GET /authorize?q and returns the response, body read.
func (e *env) authorize(q url.Values) (*http.Response, string) {
	e.t.Helper()
	return e.get(e.issuer + "/authorize?" + q.Encode())
}

func (e *env) get(u string) (*http.Response, string) {
	e.t.Helper()
	resp, err := e.hc.Get(u)
	if err != nil {
		e.t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// redirected checks that resp is a 302 to a URI starting with prefix and
// returns the query of its Location.
func (e *env) redirected(resp *http.Response, prefix string) url.Values {
	e.t.Helper()
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("status = %d, want 302", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, prefix+"?") {
		e.t.Fatalf("Location = %q, want prefix %q", loc, prefix)
	}
	u, err := url.Parse(loc)
	if err != nil {
		e.t.Fatalf("Location: %v", err)
	}
	return u.Query()
}

// code runs an auto-approved authorization request and returns the code.
func (e *env) code(q url.Values) string {
	e.t.Helper()
	resp, _ := e.authorize(q)
	got := e.redirected(resp, q.Get("redirect_uri"))
	if got.Get("code") == "" {
		e.t.Fatalf("no code in redirect: %v", got)
	}
	return got.Get("code")
}

// tokenReply is a decoded token endpoint answer.
type tokenReply struct {
	Status       int
	Header       http.Header
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// token posts form to /token; auth, if non-nil, is applied to the request.
func (e *env) token(form url.Values, auth func(*http.Request)) tokenReply {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if auth != nil {
		auth(req)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatalf("POST /token: %v", err)
	}
	defer resp.Body.Close()
	var tr tokenReply
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		e.t.Fatalf("token response: %v", err)
	}
	tr.Status, tr.Header = resp.StatusCode, resp.Header
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		e.t.Errorf("token response Cache-Control = %q, want no-store", cc)
	}
	return tr
}

// codeForm is a valid authorization_code token request for code.
func codeForm(code string) url.Values {
	return url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"code_verifier": {verifier},
		"redirect_uri":  {redirectURI},
		"client_id":     {clientID},
		"resource":      {resource},
	}
}

// atClaims are the access token claims tests check.
type atClaims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  any    `json:"aud"`
	ClientID  string `json:"client_id"`
	Scope     string `json:"scope"`
	Tenant    string `json:"tenant"`
	ID        string `json:"jti"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
}

// decode verifies tok with the server's public key and returns its
// claims and JOSE header.
func (e *env) decode(tok string) (atClaims, jose.Header) {
	e.t.Helper()
	return decodeWith(e.t, e.as.PublicKeys(), tok)
}

func decodeWith(t *testing.T, keys []jose.JSONWebKey, tok string) (atClaims, jose.Header) {
	t.Helper()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil {
		t.Fatalf("ParseSigned: %v", err)
	}
	var c atClaims
	if err := parsed.Claims(jose.JSONWebKeySet{Keys: keys}, &c); err != nil {
		t.Fatalf("Claims: %v", err)
	}
	return c, parsed.Headers[0]
}
