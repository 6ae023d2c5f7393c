package introspect_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// TestClientSecretBasic: credentials are form-urlencoded before Basic
// encoding (RFC 6749 §2.3.1), and nothing else authenticates the request.
func TestClientSecretBasic(t *testing.T) {
	const id, secret = "rs client:1", "s3cr%t&=+"
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		u, _ = url.QueryUnescape(u)
		p, _ = url.QueryUnescape(p)
		if !ok || u != id || p != secret || r.PostForm.Has("client_id") || r.PostForm.Has("client_secret") {
			answer(401, "application/json", `{"error":"invalid_client"}`)(w, r)
			return
		}
		jsonAnswer(activeJSON())(w, r)
	})
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), ClientID: id, ClientSecret: secret})
	checkErr(t, validateErr(t, in), nil)
	if _, authz := s.last(); !strings.HasPrefix(authz, "Basic ") || strings.Contains(authz, secret) {
		t.Errorf("Authorization = %q", authz)
	}
}

func TestClientSecretPost(t *testing.T) {
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.PostForm.Get("client_id") != testClient || r.PostForm.Get("client_secret") != testSecret || r.Header.Get("Authorization") != "" {
			answer(401, "application/json", `{"error":"invalid_client"}`)(w, r)
			return
		}
		jsonAnswer(activeJSON())(w, r)
	})
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "client_secret_post"})
	checkErr(t, validateErr(t, in), nil)
}

// TestPrivateKeyJWT verifies the client assertion server-side with
// go-jose, for each key family, through the crypto.Signer adapter.
func TestPrivateKeyJWT(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name    string
		key     crypto.Signer
		alg     jose.SignatureAlgorithm // configured; "" derives
		wantAlg jose.SignatureAlgorithm
	}{
		{name: "ES256 derived", key: p256, wantAlg: jose.ES256},
		{name: "ES384 derived", key: p384, wantAlg: jose.ES384},
		{name: "ES512 derived", key: p521, wantAlg: jose.ES512},
		{name: "RS256 derived", key: rs, wantAlg: jose.RS256},
		{name: "PS256", key: rs, alg: jose.PS256, wantAlg: jose.PS256},
		{name: "RS512", key: rs, alg: jose.RS512, wantAlg: jose.RS512},
		{name: "EdDSA derived", key: ed, wantAlg: jose.EdDSA},
		{name: "opaque signer", key: opaqueSigner{p256}, wantAlg: jose.ES256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s *stub
			verrc := make(chan error, 1)
			s = newStub(t, func(w http.ResponseWriter, r *http.Request) {
				verr := checkAssertion(r, tt.key.Public(), tt.wantAlg, s.URL())
				verrc <- verr
				if verr != nil {
					answer(401, "application/json", `{"error":"invalid_client"}`)(w, r)
					return
				}
				jsonAnswer(activeJSON())(w, r)
			})
			in := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "private_key_jwt", PrivateKey: tt.key, KeyID: "rs-key-1", Algorithm: tt.alg})
			if err := validateErr(t, in); err != nil {
				t.Fatalf("Validate = %v; server-side check: %v", err, <-verrc)
			}
		})
	}
}

// opaqueSigner hides the concrete key type, as an HSM or KMS signer does.
type opaqueSigner struct{ k crypto.Signer }

func (o opaqueSigner) Public() crypto.PublicKey { return o.k.Public() }
func (o opaqueSigner) Sign(r io.Reader, d []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.k.Sign(r, d, opts)
}

// checkAssertion is the authorization server's side of RFC 7523 §3.
func checkAssertion(r *http.Request, pub crypto.PublicKey, alg jose.SignatureAlgorithm, endpoint string) error {
	f := r.PostForm
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || f.Get("client_id") != testClient ||
		f.Has("client_secret") || r.Header.Get("Authorization") != "" {
		return errors.New("wrong form parameters")
	}
	tok, err := jwt.ParseSigned(f.Get("client_assertion"), []jose.SignatureAlgorithm{alg})
	if err != nil {
		return err
	}
	if h := tok.Headers[0]; h.KeyID != "rs-key-1" || h.ExtraHeaders["typ"] != "JWT" {
		return errors.New("wrong header")
	}
	var c jwt.Claims
	if err := tok.Claims(pub, &c); err != nil {
		return err
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: testClient, Subject: testClient, AnyAudience: jwt.Audience{endpoint}, Time: testNow}, 0); err != nil {
		return err
	}
	if c.ID == "" || c.Expiry.Time().Sub(c.IssuedAt.Time()) != time.Minute || !c.IssuedAt.Time().Equal(testNow) {
		return errors.New("wrong jti, iat or exp")
	}
	return nil
}

func TestBearerToken(t *testing.T) {
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer rs-access-token" || r.PostForm.Has("client_id") {
			answer(401, "application/json", `{"error":"invalid_token"}`)(w, r)
			return
		}
		jsonAnswer(activeJSON())(w, r)
	})
	ts := introspect.StaticToken(&oauth2.Token{AccessToken: "rs-access-token", TokenType: "DPoP"})
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: ts})
	checkErr(t, validateErr(t, in), nil)

	// A failing token source: our own credentials are missing, so 503,
	// logged loudly, and nothing is sent.
	var logs logBuffer
	bad := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: failingSource{}, Logger: logs.logger()})
	before := s.calls.Load()
	err := validateErr(t, bad)
	checkErr(t, err, validate.ErrKeysUnavailable)
	if !errors.Is(err, introspect.ErrClientAuth) || !strings.Contains(logs.String(), "level=ERROR") || s.calls.Load() != before {
		t.Errorf("err = %v, calls %d→%d, log:\n%s", err, before, s.calls.Load(), logs.String())
	}
	expired := introspect.StaticToken(&oauth2.Token{AccessToken: "x", Expiry: time.Unix(1, 0)})
	err = validateErr(t, newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: expired}))
	checkErr(t, err, validate.ErrKeysUnavailable)
}

type failingSource struct{}

func (failingSource) Token(context.Context) (*oauth2.Token, error) {
	return nil, errors.New("token endpoint down")
}

func validateErr(t *testing.T, in *introspect.Introspector) error {
	t.Helper()
	_, err := in.Validate(t.Context(), testToken)
	return err
}
