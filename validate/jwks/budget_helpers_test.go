package jwks_test

// Helpers of the key-wait budget tests (budget_test.go): a JWKS server whose
// set can be swapped, slowed or hung, and ES256 tokens signed with go-jose.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

type key struct {
	priv *ecdsa.PrivateKey
	kid  string
}

func newKey(t testing.TB, kid string) key {
	p, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key{p, kid}
}

func (k key) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: "ES256", Use: "sig"}
}

func mint(t testing.TB, k key, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.priv},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", k.kid))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const iss = "https://as.example"

func claims(aud string) map[string]any {
	now := time.Now().Unix()
	return map[string]any{"iss": iss, "sub": "alice", "aud": aud, "exp": now + 600, "iat": now, "jti": "j1", "client_id": "c1"}
}

// jwksSrv serves a key set that can be swapped, or hangs.
type jwksSrv struct {
	mu   sync.Mutex
	set  []byte
	hang bool
	srv  *httptest.Server
	stop chan struct{}
}

func newJWKS(t *testing.T, keys ...jose.JSONWebKey) *jwksSrv {
	s := &jwksSrv{stop: make(chan struct{})}
	s.setKeys(keys...)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hang, set := s.hang, s.set
		s.mu.Unlock()
		if hang {
			select {
			case <-r.Context().Done():
			case <-s.stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(set)
	}))
	t.Cleanup(func() { close(s.stop); s.srv.Close() })
	return s
}

func (s *jwksSrv) setKeys(keys ...jose.JSONWebKey) {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	s.mu.Lock()
	s.set = b
	s.mu.Unlock()
}
func (s *jwksSrv) setHang() { s.mu.Lock(); s.hang = true; s.mu.Unlock() }

// steppedClock is the real clock moved forward by the test (jwks.Config.Now),
// so that the on-demand rate limit opens when the test says, not after a
// sleep.
type steppedClock struct{ skew atomic.Int64 }

func (c *steppedClock) Now() time.Time          { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *steppedClock) Advance(d time.Duration) { c.skew.Add(int64(d)) }

// eventCtx bounds a call that must return by itself: generous, so that
// only a bug, never a loaded machine, exhausts it.
func eventCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A cached token whose key was rotated out must not wait twice on a hanging
// AS (once to check the key is still published, once more in the full
// validation): the lookup that starts the hung refresh is its only waiter.
// Counted, not timed: a second wait would join the refresh, which hangs
// for its whole FetchTimeout (an hour) and is still running when Validate
// returns (each wait ends on WaitTimeout).
func TestValidateBudgetCachedTokenOnHangingAS(t *testing.T) {
	const limit = 10 * time.Millisecond
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	as := newJWKS(t, k1.jwk())
	clk := &steppedClock{}
	src, err := jwks.New(jwks.Config{Issuer: iss, JWKSURL: as.srv.URL + "/jwks", RefreshRateLimit: limit, FetchTimeout: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss, Keys: src}},
		Audiences: []string{"https://rs.example/mcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(t, k1, claims("https://rs.example/mcp"))
	if _, err := v.Validate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	// Key rotation: k1 removed, then the AS starts hanging.
	as.setKeys(k2.jwk())
	if err := src.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	as.setHang()
	clk.Advance(limit) // the on-demand rate limit opens
	ctx := eventCtx(t)
	start := time.Now()
	_, err = v.Validate(ctx, tok)
	d := time.Since(start)
	t.Logf("Validate = %v after %v", err, d)
	if err == nil {
		t.Fatal("accepted")
	}
	running, joined := jwks.RunningJoins(src)
	if !running || ctx.Err() != nil {
		t.Fatalf("the hung refresh ended (%t) or the caller's context did (%v) before Validate returned", !running, ctx.Err())
	}
	if joined != 0 {
		t.Errorf("%d more lookups waited on the hung refresh after the one that started it, want 0 (one wait per Validate)", joined)
	}
}
