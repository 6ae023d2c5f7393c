package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// fixedKeys returns the same keys for every kid.
type fixedKeys []jose.JSONWebKey

func (f fixedKeys) Keys(context.Context, string) ([]jose.JSONWebKey, error) { return f, nil }

// errKeys always fails with err.
type errKeys struct{ err error }

func (e errKeys) Keys(context.Context, string) ([]jose.JSONWebKey, error) { return nil, e.err }

// rotatingKeys serves before until Refresh is called, then after. It
// counts calls.
type rotatingKeys struct {
	mu            sync.Mutex
	before, after []jose.JSONWebKey
	refreshed     bool
	refreshErr    error
	keyCalls      int
	refreshCalls  int
}

func (r *rotatingKeys) Keys(_ context.Context, kid string) ([]jose.JSONWebKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keyCalls++
	set := r.before
	if r.refreshed {
		set = r.after
	}
	return (&StaticKeys{Set: set}).Keys(context.Background(), kid)
}

func (r *rotatingKeys) Refresh(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshCalls++
	if r.refreshErr != nil {
		return r.refreshErr
	}
	r.refreshed = true
	return nil
}

var _ keyRefresher = (*rotatingKeys)(nil)

func TestValidateKeySourceErrors(t *testing.T) {
	k := keys(t)
	tok := mint(t, k.es256, baseClaims())
	tests := []struct {
		name    string
		src     KeySource
		wantErr error
	}{
		{"not found", errKeys{errKeyNotFound}, errKeyNotFound},
		{"not found quoting kid", errKeys{fmt.Errorf("%w: kid %q", errKeyNotFound, "es256")}, errKeyNotFound},
		{"unavailable", errKeys{fmt.Errorf("jwks: %w", ErrKeysUnavailable)}, ErrKeysUnavailable},
		{"other error", errKeys{errors.New("connection refused")}, ErrKeysUnavailable},
		{"context canceled", errKeys{context.Canceled}, ErrKeysUnavailable},
		{"empty set", fixedKeys{}, errKeyNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestValidator(t, func(c *Config) { c.Issuers[0].Keys = tt.src })
			_, err := v.Validate(t.Context(), tok)
			if !errors.Is(err, tt.wantErr) || !wrapsOneSentinel(err) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "es256") {
				t.Errorf("error %q quotes the unverified kid", err)
			}
		})
	}
	t.Run("cause kept for unavailable", func(t *testing.T) {
		cause := errors.New("connection refused")
		v := newTestValidator(t, func(c *Config) { c.Issuers[0].Keys = errKeys{cause} })
		if _, err := v.Validate(t.Context(), tok); !errors.Is(err, cause) {
			t.Errorf("got err %v, want it to wrap the cause", err)
		}
	})
}

func TestValidateRefresh(t *testing.T) {
	k := keys(t)
	old := jose.JSONWebKey{Key: k.es256b.priv.Public(), KeyID: "es256"} // wrong key under the kid
	cur := k.es256.jwk()
	tok := mint(t, k.es256, baseClaims())
	tests := []struct {
		name        string
		src         *rotatingKeys
		tok         string
		wantErr     error
		wantRefresh int
	}{
		{"re-keyed under same kid", &rotatingKeys{before: []jose.JSONWebKey{old}, after: []jose.JSONWebKey{cur}}, tok, nil, 1},
		{"still wrong after refresh", &rotatingKeys{before: []jose.JSONWebKey{old}, after: []jose.JSONWebKey{old}}, tok, errSignature, 1},
		{"kid gone after refresh", &rotatingKeys{before: []jose.JSONWebKey{old}}, tok, errKeyNotFound, 1},
		{"refresh refused", &rotatingKeys{before: []jose.JSONWebKey{old}, after: []jose.JSONWebKey{cur}, refreshErr: errors.New("rate limited")}, tok, errSignature, 1},
		{"no refresh when kid unknown", &rotatingKeys{after: []jose.JSONWebKey{cur}}, tok, errKeyNotFound, 0},
		{"no refresh when valid", &rotatingKeys{before: []jose.JSONWebKey{cur}}, tok, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestValidator(t, func(c *Config) { c.Issuers[0].Keys = tt.src })
			if _, err := v.Validate(t.Context(), tt.tok); !errors.Is(err, tt.wantErr) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if tt.src.refreshCalls != tt.wantRefresh {
				t.Errorf("Refresh calls: got %d, want %d", tt.src.refreshCalls, tt.wantRefresh)
			}
		})
	}
	t.Run("no refresh for an implausible signature", func(t *testing.T) {
		src := &rotatingKeys{before: []jose.JSONWebKey{old}, after: []jose.JSONWebKey{cur}}
		v := newTestValidator(t, func(c *Config) { c.Issuers[0].Keys = src })
		short := tok[:strings.LastIndexByte(tok, '.')+1] + "AAAA"
		if _, err := v.Validate(t.Context(), short); !errors.Is(err, errSignature) || src.refreshCalls != 0 {
			t.Errorf("got err %v and %d refreshes, want errSignature and none", err, src.refreshCalls)
		}
	})
	t.Run("re-keyed without kid", func(t *testing.T) {
		// A token without kid whose signature no served key verifies asks
		// for one refresh, as under a known kid: the issuer re-keyed.
		src := &rotatingKeys{before: []jose.JSONWebKey{old}, after: []jose.JSONWebKey{cur}}
		v := newTestValidator(t, func(c *Config) { c.Issuers[0].Keys = src })
		nokid := forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt"}`, claimsJSON(baseClaims()))
		if _, err := v.Validate(t.Context(), nokid); err != nil || src.refreshCalls != 1 {
			t.Errorf("got err %v and %d refreshes, want nil and one", err, src.refreshCalls)
		}
	})
}

// TestErrorsNeverQuoteToken checks that no error text carries a value read
// from the token, for every failure class, using marker values.
func TestErrorsNeverQuoteToken(t *testing.T) {
	k := keys(t)
	const m = "MARKER"
	toks := []string{
		forge(t, k.es256, `{"alg":"`+m+`","typ":"at+jwt","kid":"es256"}`, claimsJSON(baseClaims())),
		forge(t, k.es256, `{"alg":"ES256","typ":"`+m+`","kid":"es256"}`, claimsJSON(baseClaims())),
		forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt","kid":"`+m+`"}`, claimsJSON(baseClaims())),
		forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt","kid":"es256","`+m+`":1,"`+strings.ToLower(m)+`":2}`, claimsJSON(baseClaims())),
		mint(t, k.es256, with("iss", m)),
		mint(t, k.es256, with("aud", m)),
		mint(t, k.es256, with("client_id", m)),
		mint(t, k.es256, with("sub", map[string]string{m: m})),
		mint(t, k.es256, with("exp", m)),
		mint(t, k.es256, with("scope", m+"\t")),
		mint(t, k.es256b, with("sub", m)),
	}
	v := newTestValidator(t, func(c *Config) { c.AllowedClients = []string{"client-1"} })
	for i, tok := range toks {
		_, err := v.Validate(t.Context(), tok)
		if err == nil {
			t.Fatalf("token %d: got nil error", i)
		}
		if strings.Contains(strings.ToUpper(err.Error()), m) {
			t.Errorf("token %d: error %q quotes the token", i, err)
		}
	}
}
