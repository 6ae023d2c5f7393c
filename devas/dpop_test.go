package devas_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/devas"
)

// TestDPoPTokens: a token request with a DPoP proof (RFC 9449 §5) gets a
// token bound to the key (cnf.jkt, token_type DPoP), and its refresh token
// is bound too; a request without a proof gets a Bearer token; a bad
// proof is invalid_dpop_proof.
func TestDPoPTokens(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.RefreshTokens = true })
	key, err := client.NewDPoPKey(nil, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := client.NewDPoPKey(nil, e.clock.Now)
	withProof := func(k *client.DPoPKey) func(*http.Request) {
		return func(r *http.Request) {
			p, err := k.Proof(http.MethodPost, e.issuer+"/token", "")
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("DPoP", p)
		}
	}
	q := authParams()
	q.Set("scope", "tools:read offline_access")
	tr := e.token(codeForm(e.code(q)), withProof(key))
	if tr.Status != 200 || tr.TokenType != "DPoP" || jktOf(t, e, tr.AccessToken) != key.Thumbprint() {
		t.Fatalf("bound token: %+v", tr)
	}
	refresh := func(k *client.DPoPKey) tokenReply {
		f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {clientID}}
		var auth func(*http.Request)
		if k != nil {
			auth = withProof(k)
		}
		return e.token(f, auth)
	}
	if got := refresh(nil); got.Status != 400 || got.Error != "invalid_dpop_proof" {
		t.Errorf("refresh without proof: %+v", got)
	}
	if got := refresh(other); got.Status != 400 || got.Error != "invalid_dpop_proof" {
		t.Errorf("refresh with another key: %+v", got)
	}
	if got := refresh(key); got.Status != 200 || got.TokenType != "DPoP" || jktOf(t, e, got.AccessToken) != key.Thumbprint() {
		t.Errorf("refresh with the key: %+v", got)
	}

	plain := e.token(codeForm(e.code(authParams())), nil)
	if plain.Status != 200 || plain.TokenType != "Bearer" || jktOf(t, e, plain.AccessToken) != "" {
		t.Errorf("bearer token: %+v", plain)
	}
	bad := e.token(codeForm(e.code(authParams())), func(r *http.Request) { r.Header.Set("DPoP", "not.a.proof") })
	if bad.Status != 400 || bad.Error != "invalid_dpop_proof" {
		t.Errorf("bad proof: %+v", bad)
	}
	wrongHTU := e.token(codeForm(e.code(authParams())), func(r *http.Request) {
		p, _ := key.Proof(http.MethodPost, e.issuer+"/authorize", "")
		r.Header.Set("DPoP", p)
	})
	if wrongHTU.Status != 400 || wrongHTU.Error != "invalid_dpop_proof" {
		t.Errorf("proof for another endpoint: %+v", wrongHTU)
	}
}

func jktOf(t *testing.T, e *env, tok string) string {
	t.Helper()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	if err := parsed.Claims(jose.JSONWebKeySet{Keys: e.as.PublicKeys()}, &c); err != nil {
		t.Fatal(err)
	}
	return c.Cnf.JKT
}

// TestDPoPCodeBinding: an authorization request with dpop_jkt (RFC 9449
// §10) gives a code that only a token request with a proof by that key
// can spend; without a proof or with another key it is invalid_grant, and
// the code is spent. The binding survives the consent page (it travels in
// the signed form). A malformed dpop_jkt is refused at the authorization
// endpoint.
func TestDPoPCodeBinding(t *testing.T) {
	e := start(t, nil)
	key, err := client.NewDPoPKey(nil, e.clock.Now) // every env's clock reads t0
	if err != nil {
		t.Fatal(err)
	}
	other, _ := client.NewDPoPKey(nil, e.clock.Now)
	withProof := func(e *env, k *client.DPoPKey) func(*http.Request) {
		return func(r *http.Request) {
			p, err := k.Proof(http.MethodPost, e.issuer+"/token", "")
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("DPoP", p)
		}
	}
	bound := func() url.Values {
		q := authParams()
		q.Set("dpop_jkt", key.Thumbprint())
		return q
	}
	for _, tc := range []struct {
		name  string
		proof *client.DPoPKey
		want  string // "" for success
	}{
		{"proof by the named key", key, ""},
		{"no proof", nil, "invalid_grant"},
		{"proof by another key", other, "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			form := codeForm(e.code(bound()))
			var auth func(*http.Request)
			if tc.proof != nil {
				auth = withProof(e, tc.proof)
			}
			got := e.token(form, auth)
			if tc.want == "" {
				if got.Status != 200 || got.TokenType != "DPoP" || jktOf(t, e, got.AccessToken) != key.Thumbprint() {
					t.Fatalf("got %+v, want a token bound to the key", got)
				}
				return
			}
			if got.Status != 400 || got.Error != tc.want {
				t.Fatalf("got %+v, want 400 %s", got, tc.want)
			}
			// The code is spent: not even the right key can use it now.
			if again := e.token(form, withProof(e, key)); again.Status != 400 || again.Error != "invalid_grant" {
				t.Errorf("code after a refused exchange: %+v", again)
			}
		})
	}

	t.Run("through the consent page", func(t *testing.T) {
		c := consentEnv(t, "Dev Client")
		resp, body := c.authorize(bound())
		m1, m2 := requestIDRe.FindStringSubmatch(body), csrfRe.FindStringSubmatch(body)
		if resp.StatusCode != 200 || m1 == nil || m2 == nil || len(resp.Cookies()) != 1 {
			t.Fatalf("consent page: %d", resp.StatusCode)
		}
		approved := c.postConsent(url.Values{"request_id": {m1[1]}, "csrf": {m2[1]}, "action": {"approve"}}, resp.Cookies()[0])
		code := c.redirected(approved, redirectURI).Get("code")
		if got := c.token(codeForm(code), withProof(c, other)); got.Status != 400 || got.Error != "invalid_grant" {
			t.Fatalf("other key after consent: %+v", got)
		}
	})

	for _, bad := range []string{"short", key.Thumbprint() + "A", key.Thumbprint()[:42] + "=", strings.Repeat("+", 43)} {
		q := authParams()
		q.Set("dpop_jkt", bad)
		resp, _ := e.authorize(q)
		if got := e.redirected(resp, redirectURI); got.Get("error") != "invalid_request" {
			t.Errorf("dpop_jkt %q: redirect %v, want invalid_request", bad, got)
		}
	}
}
