package devas_test

import (
	"net/http"
	"net/url"
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
