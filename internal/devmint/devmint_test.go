package devmint_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/deptest"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/internal/devtoken"
)

// TestDeps: devmint composes devas and its token signer, nothing else.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/devas",
			deptest.Module + "/internal/devtoken",
		},
	}.Check(t, ".")
}

const (
	issuer   = "http://127.0.0.1:9000"
	resource = "http://127.0.0.1:8080/mcp"
)

// jwks reads the server's /jwks through its handler.
func jwks(t *testing.T, h http.Handler) jose.JSONWebKeySet {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/jwks", nil))
	var set jose.JSONWebKeySet
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &set) != nil || len(set.Keys) != 1 {
		t.Fatalf("/jwks: %d %s", rec.Code, rec.Body)
	}
	return set
}

type claims struct {
	jwt.Claims
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	Tenant   string `json:"tenant"`
	Cnf      *struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

// verify checks tok against the server's published key and returns its
// header and claims.
func verify(t *testing.T, h http.Handler, tok string, alg jose.SignatureAlgorithm) (jose.Header, claims) {
	t.Helper()
	set := jwks(t, h)
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{alg})
	if err != nil {
		t.Fatal(err)
	}
	hdr := parsed.Headers[0]
	keys := set.Key(hdr.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q is not the published key's (%v)", hdr.KeyID, set.Keys[0].KeyID)
	}
	var c claims
	if err := parsed.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("the minted token does not verify with the published key: %v", err)
	}
	return hdr, c
}

// TestNewCarriesEveryField: every devas.Config field the token signer
// reads (Issuer, Resources, SigningAlgorithm, Key, KeyID, TokenTTL, Now)
// reaches the minted token, and the server publishes the key it is signed
// with; with all of them zero, the generated key is still the published
// one.
func TestNewCarriesEveryField(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := devmint.New(devas.Config{
		Issuer: issuer, Resources: []string{resource}, SigningAlgorithm: jose.ES384, Key: key, KeyID: "k1",
		TokenTTL: 7 * time.Minute, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.IssueBoundToken("jkt-1", "alice", "acme", "cli", resource, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	hdr, c := verify(t, s, tok, jose.ES384)
	if hdr.KeyID != "k1" || hdr.ExtraHeaders["typ"] != "at+jwt" {
		t.Errorf("header %+v", hdr)
	}
	if c.Issuer != issuer || len(c.Audience) != 1 || c.Audience[0] != resource || c.Subject != "alice" ||
		c.Tenant != "acme" || c.ClientID != "cli" || c.Scope != "a b" || c.Cnf == nil || c.Cnf.JKT != "jkt-1" {
		t.Errorf("claims %+v", c)
	}
	if c.IssuedAt.Time() != now || c.NotBefore.Time() != now || c.Expiry.Time() != now.Add(7*time.Minute) {
		t.Errorf("iat %v nbf %v exp %v, want %v and 7m later", c.IssuedAt.Time(), c.NotBefore.Time(), c.Expiry.Time(), now)
	}
	if _, err := s.IssueToken("alice", "", "cli", "http://127.0.0.1:8081/mcp", nil); !errors.Is(err, devtoken.ErrUnknownResource) {
		t.Errorf("another resource: %v, want ErrUnknownResource", err)
	}

	d, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err = d.IssueToken("bob", "", "cli", resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, c = verify(t, d, tok, jose.ES256)
	if got := c.Expiry.Time().Sub(c.IssuedAt.Time()); got != time.Hour {
		t.Errorf("default lifetime %v, want 1h", got)
	}

	if _, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, SigningAlgorithm: jose.RS256, Key: key}); !errors.Is(err, devas.ErrConfig) {
		t.Errorf("a key that does not suit the algorithm: %v, want ErrConfig", err)
	}
}
