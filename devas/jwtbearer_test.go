package devas_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

const (
	idpIssuer      = "https://idp.example"
	workloadIssuer = "https://kubernetes.default.svc"
	xaaClient      = "xaa-client"
	xaaSecret      = "xaa-secret"
	grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// issuerKey is a signing key of a test identity provider or workload
// issuer.
type issuerKey struct {
	priv *ecdsa.PrivateKey
	kid  string
}

func newIssuerKey(t testing.TB, kid string) issuerKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return issuerKey{k, kid}
}

func (k issuerKey) public() []jose.JSONWebKey {
	return []jose.JSONWebKey{{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: "ES256", Use: "sig"}}
}

// sign returns a compact JWS of claims with header typ (omitted if "").
func (k issuerKey) sign(t testing.TB, typ string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", k.kid)
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// xaaConfidential is a pre-registered confidential client allowed the
// JWT bearer grant.
func xaaConfidential() cimd.Client {
	c := cimd.Client{Document: cimd.Document{
		ClientID: xaaClient, ClientName: "XAA", RedirectURIs: []string{redirectURI},
		GrantTypes: []string{"authorization_code", grantJWTBearer}, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "client_secret_basic",
	}}
	c.SetSecret(xaaSecret)
	return c
}

func xaaAuth(r *http.Request) { r.SetBasicAuth(xaaClient, xaaSecret) }

func TestJWTBearerIDJAG(t *testing.T) {
	idp, other := newIssuerKey(t, "idp-1"), newIssuerKey(t, "idp-1")
	e := start(t, func(c *devas.Config) {
		c.Clients = append(c.Clients, xaaConfidential())
		c.TrustedIdPs = []devas.TrustedIssuer{{Issuer: idpIssuer, Keys: idp.public()}}
	})
	n := 0
	jag := func(mod func(map[string]any)) map[string]any {
		n++
		c := map[string]any{
			"iss": idpIssuer, "sub": "alice@example.com", "aud": e.issuer, "client_id": xaaClient,
			"resource": resource, "jti": "jag-" + string(rune('a'+n)), "scope": "tools:read",
			"iat": t0.Unix(), "exp": t0.Add(5 * time.Minute).Unix(),
		}
		if mod != nil {
			mod(c)
		}
		return c
	}
	form := func(assertion string) url.Values {
		return url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}, "resource": {resource}, "scope": {"tools:read tools:write"}}
	}
	replayed := idp.sign(t, "oauth-id-jag+jwt", jag(nil))
	tests := []struct {
		name       string
		assertion  string
		auth       func(*http.Request)
		form       func(url.Values)
		wantStatus int
		wantError  string
		wantScope  string
	}{
		{name: "valid", assertion: replayed, auth: xaaAuth, wantStatus: 200, wantScope: "tools:read"},
		{name: "replayed", assertion: replayed, auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "another resource", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["resource"] = "https://other.example/mcp" })),
			auth: xaaAuth, form: func(f url.Values) { f.Del("resource") }, wantStatus: 400, wantError: "invalid_grant"},
		{name: "request for another resource", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(nil)),
			auth: xaaAuth, form: func(f url.Values) { f.Set("resource", "http://127.0.0.1:8080/other") }, wantStatus: 400, wantError: "invalid_target"},
		{name: "untrusted issuer", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["iss"] = "https://evil.example" })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "signed by another key", assertion: other.sign(t, "oauth-id-jag+jwt", jag(nil)), auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "expired", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["exp"] = t0.Unix() })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "lifetime too long", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["exp"] = t0.Add(time.Hour).Unix() })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "wrong typ", assertion: idp.sign(t, "JWT", jag(nil)), auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "another audience", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["aud"] = "https://as.example" })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "another client", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["client_id"] = "someone-else" })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "no jti", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { delete(c, "jti") })),
			auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
		{name: "no client authentication", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(nil)), wantStatus: 401, wantError: "invalid_client"},
		{name: "wrong secret", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(nil)),
			auth: func(r *http.Request) { r.SetBasicAuth(xaaClient, "nope") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "client without the grant", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(func(c map[string]any) { c["client_id"] = clientID })),
			form: func(f url.Values) { f.Set("client_id", clientID) }, wantStatus: 400, wantError: "unauthorized_client"},
		{name: "scope outside the ID-JAG's", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(nil)),
			auth: xaaAuth, form: func(f url.Values) { f.Set("scope", "tools:write") }, wantStatus: 400, wantError: "invalid_scope"},
		{name: "no scope requested: the ID-JAG's", assertion: idp.sign(t, "oauth-id-jag+jwt", jag(nil)),
			auth: xaaAuth, form: func(f url.Values) { f.Del("scope") }, wantStatus: 200, wantScope: "tools:read"},
		{name: "not a JWT", assertion: "x.y.z", auth: xaaAuth, wantStatus: 400, wantError: "invalid_grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := form(tt.assertion)
			if tt.form != nil {
				tt.form(f)
			}
			got := e.token(f, tt.auth)
			if got.Status != tt.wantStatus || got.Error != tt.wantError {
				t.Fatalf("got %d %q (%s), want %d %q", got.Status, got.Error, got.Description, tt.wantStatus, tt.wantError)
			}
			if tt.wantStatus != 200 {
				return
			}
			c, _ := e.decode(got.AccessToken)
			if c.Subject != "alice@example.com" || c.Audience != resource || c.ClientID != xaaClient || c.Scope != tt.wantScope || got.Scope != tt.wantScope {
				t.Errorf("token claims: got %+v (scope %q), want sub alice@example.com, aud %s, client_id %s, scope %q", c, got.Scope, resource, xaaClient, tt.wantScope)
			}
		})
	}
}

func TestJWTBearerWorkload(t *testing.T) {
	k := newIssuerKey(t, "k8s")
	e := start(t, func(c *devas.Config) {
		c.TrustedWorkloads = []devas.TrustedIssuer{{Issuer: workloadIssuer, Keys: k.public(),
			Subjects: []string{"system:serviceaccount:agents:*"}, Tenant: "tenant-b"}}
	})
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": workloadIssuer, "sub": "system:serviceaccount:agents:router", "aud": e.issuer + "/token",
			"jti": "w1", "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	form := func(a string) url.Values {
		return url.Values{"grant_type": {grantJWTBearer}, "assertion": {a}, "resource": {resource}, "scope": {"tools:read"}}
	}
	valid := k.sign(t, "JWT", claims(nil))
	tests := []struct {
		name       string
		assertion  string
		form       func(url.Values)
		wantStatus int
		wantError  string
	}{
		{name: "valid", assertion: valid, wantStatus: 200},
		{name: "presented again", assertion: valid, wantStatus: 200},
		{name: "audience the issuer", assertion: k.sign(t, "", claims(func(c map[string]any) { c["aud"] = []string{e.issuer} })), wantStatus: 200},
		{name: "subject not allowed", assertion: k.sign(t, "JWT", claims(func(c map[string]any) { c["sub"] = "system:serviceaccount:default:x" })),
			wantStatus: 400, wantError: "invalid_grant"},
		{name: "expired", assertion: k.sign(t, "JWT", claims(func(c map[string]any) { c["exp"] = t0.Add(-time.Second).Unix() })),
			wantStatus: 400, wantError: "invalid_grant"},
		{name: "access token type", assertion: k.sign(t, "at+jwt", claims(nil)), wantStatus: 400, wantError: "invalid_grant"},
		{name: "no resource", assertion: valid, form: func(f url.Values) { f.Del("resource") }, wantStatus: 400, wantError: "invalid_target"},
		{name: "unknown scope", assertion: valid, form: func(f url.Values) { f.Set("scope", "admin") }, wantStatus: 400, wantError: "invalid_scope"},
		{name: "unknown client", assertion: valid, form: func(f url.Values) { f.Set("client_id", "nobody") }, wantStatus: 401, wantError: "invalid_client"},
		{name: "no assertion", assertion: "", form: func(f url.Values) { f.Del("assertion") }, wantStatus: 400, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := form(tt.assertion)
			if tt.form != nil {
				tt.form(f)
			}
			got := e.token(f, nil)
			if got.Status != tt.wantStatus || got.Error != tt.wantError {
				t.Fatalf("got %d %q (%s), want %d %q", got.Status, got.Error, got.Description, tt.wantStatus, tt.wantError)
			}
			if tt.wantStatus != 200 {
				return
			}
			c, _ := e.decode(got.AccessToken)
			if c.Subject != "system:serviceaccount:agents:router" || c.ClientID != c.Subject || c.Tenant != "tenant-b" || c.Audience != resource || c.Scope != "tools:read" {
				t.Errorf("token claims: got %+v", c)
			}
		})
	}
}

// TestJWTBearerDisabled: without trusted issuers the grant is unknown,
// and the metadata does not list it.
func TestJWTBearerDisabled(t *testing.T) {
	e := start(t, nil)
	got := e.token(url.Values{"grant_type": {grantJWTBearer}, "assertion": {"x.y.z"}, "client_id": {clientID}}, nil)
	if got.Status != 400 || got.Error != "unsupported_grant_type" {
		t.Errorf("got %d %q, want 400 unsupported_grant_type", got.Status, got.Error)
	}
}

func TestTrustedIssuerConfig(t *testing.T) {
	k := newIssuerKey(t, "k")
	priv := []jose.JSONWebKey{{Key: k.priv, KeyID: "k"}}
	tests := []struct {
		name string
		mod  func(*devas.Config)
	}{
		{"no issuer", func(c *devas.Config) { c.TrustedIdPs = []devas.TrustedIssuer{{Keys: k.public()}} }},
		{"no keys", func(c *devas.Config) { c.TrustedIdPs = []devas.TrustedIssuer{{Issuer: idpIssuer}} }},
		{"private key", func(c *devas.Config) { c.TrustedIdPs = []devas.TrustedIssuer{{Issuer: idpIssuer, Keys: priv}} }},
		{"workload without subjects", func(c *devas.Config) {
			c.TrustedWorkloads = []devas.TrustedIssuer{{Issuer: workloadIssuer, Keys: k.public()}}
		}},
		{"bad tenant", func(c *devas.Config) {
			c.TrustedIdPs = []devas.TrustedIssuer{{Issuer: idpIssuer, Keys: k.public(), Tenant: "a b"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := devas.Config{Issuer: "http://127.0.0.1:9000", Resources: []string{resource}}
			tt.mod(&cfg)
			if _, err := devas.New(cfg); !errors.Is(err, devas.ErrConfig) {
				t.Errorf("got %v, want %v", err, devas.ErrConfig)
			}
		})
	}
}

// FuzzJWTBearer: any assertion (and client header) gives no panic and,
// since the fuzzer does not hold the trusted issuers' keys, never a token.
func FuzzJWTBearer(f *testing.F) {
	trusted, forger := newIssuerKey(f, "k"), newIssuerKey(f, "k")
	as, err := devas.New(devas.Config{
		Issuer: "http://127.0.0.1:9000", Resources: []string{resource}, Scopes: []string{"tools:read"},
		Clients: []cimd.Client{publicClient(), xaaConfidential()}, DisableCIMD: true, Now: func() time.Time { return t0 },
		TrustedIdPs:      []devas.TrustedIssuer{{Issuer: idpIssuer, Keys: trusted.public()}},
		TrustedWorkloads: []devas.TrustedIssuer{{Issuer: workloadIssuer, Keys: trusted.public(), Subjects: []string{"*"}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	claims := map[string]any{"iss": idpIssuer, "sub": "u", "aud": "http://127.0.0.1:9000", "client_id": xaaClient,
		"resource": resource, "jti": "j", "exp": t0.Add(time.Minute).Unix()}
	f.Add(forger.sign(f, "oauth-id-jag+jwt", claims), "Basic eGFhLWNsaWVudDp4YWEtc2VjcmV0")
	claims["iss"] = workloadIssuer
	f.Add(forger.sign(f, "JWT", claims), "")
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIn0.", "")
	f.Add("a.b.c.d.e", "Basic !!!")
	f.Fuzz(func(t *testing.T, assertion, authz string) {
		body := url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}, "resource": {resource}}.Encode()
		r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		as.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			t.Fatalf("token issued for %q", assertion)
		}
	})
}
