package jwks_test

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// newRotationValidator is a real validator over a real jwks.Source of iss
// with the default settings except cfg's.
func newRotationValidator(t *testing.T, iss *authtest.Issuer, cfg jwks.Config) *validate.Validator {
	t.Helper()
	cfg.Issuer, cfg.JWKSURL = iss.URL, iss.JWKSURL
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = time.Hour // no periodic refresh during the test
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := jwks.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: src}},
		Audiences: []string{iss.Audience},
		Now:       iss.Now,
		CacheSize: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRekeyTwiceWithinRateLimit: with the default settings, an issuer
// publishes a new key and signs with it, then does it again within the
// on-demand refresh limit (4 s). Both tokens are accepted on their first
// presentation: the second waits for the deferred refresh instead of being
// refused, which costs exactly one more fetch.
func TestRekeyTwiceWithinRateLimit(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	v := newRotationValidator(t, iss, jwks.Config{})
	if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{})); err != nil {
		t.Fatalf("token before rotation: %v", err)
	}
	iss.AddKey(authtest.GenerateKey(jose.ES256, "es256-2")) // the new signing key
	if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{})); err != nil {
		t.Fatalf("token by the first new key: %v", err)
	}
	iss.AddKey(authtest.GenerateKey(jose.ES256, "es256-3")) // inside the rate limit of the refresh just made
	start := time.Now()
	if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{})); err != nil {
		t.Fatalf("token by the second new key, on first presentation: %v", err)
	}
	// Accepted at all means the deferred refresh ended the wait, within
	// its bound (the armed timer, then WaitTimeout, 2 s; a wait that ran
	// out is errWaitTimeout, a refusal). That the timer is armed for when
	// the limit opens is TestDeferredRefreshArmedForLimit's, on a pinned
	// clock; the latency is not timed here.
	took := time.Since(start)
	if got := iss.Requests(iss.JWKSURL); got != 3 {
		t.Errorf("fetches = %d, want 3 (initial, on-demand, deferred)", got)
	}
	t.Logf("second new key accepted after %v", took)
}

// TestKidlessTokens: RFC 7515 §4.1.4 makes "kid" optional. A token without
// one is verified against the issuer's keys that fit its alg, published
// with or without a kid; one that no key verifies is a 401 (ErrSignature
// or ErrKeyNotFound), never "keys unavailable".
func TestKidlessTokens(t *testing.T) {
	noKID := authtest.NoKID().Header
	t.Run("one-key issuer, key without kid", func(t *testing.T) {
		iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
		for _, kid := range []string{"es256-1", "rs256-1", "eddsa-1"} {
			iss.RemoveKey(kid)
		}
		k := authtest.GenerateKey(jose.ES256, "")
		iss.AddKey(k)
		v := newRotationValidator(t, iss, jwks.Config{})
		if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{Key: k, Header: noKID})); err != nil {
			t.Fatalf("kid-less token of a one-key issuer: %v", err)
		}
		other := authtest.GenerateKey(jose.ES256, "")
		_, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{Key: other, Header: noKID}))
		if !errors.Is(err, validate.Error{Reason: "signature"}) || errors.Is(err, validate.ErrKeysUnavailable) {
			t.Errorf("kid-less token of an unknown key = %v, want %v", err, validate.Error{Reason: "signature"})
		}
	})
	t.Run("keys with kids", func(t *testing.T) {
		iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
		v := newRotationValidator(t, iss, jwks.Config{})
		for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA} {
			if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{Alg: alg, Header: noKID})); err != nil {
				t.Errorf("kid-less %s token: %v", alg, err)
			}
		}
	})
}

// TestRotationAcceptedOnFirstPresentation runs a real validator over a real
// loopback JWKS (authtest) with the real clock: right after an on-demand
// refresh (a flood of unknown kids), the authorization server publishes a
// new kid, or new material under its current kid. The first token signed
// with it is accepted on its first presentation, about one rate limit
// later, at the price of exactly one more fetch; the flood itself costs
// one fetch per limit.
func TestRotationAcceptedOnFirstPresentation(t *testing.T) {
	const limit = 500 * time.Millisecond
	tests := []struct {
		name   string
		rotate func(iss *authtest.Issuer) authtest.Token // the new token's spec
	}{
		{"new kid", func(iss *authtest.Issuer) authtest.Token {
			iss.AddKey(authtest.GenerateKey(jose.ES256, "es256-2")) // the new signing key
			return authtest.Token{}
		}},
		{"new material under the same kid", func(iss *authtest.Issuer) authtest.Token {
			k := authtest.GenerateKey(jose.ES256, "es256-1")
			iss.RemoveKey("es256-1")
			iss.AddKey(k)
			return authtest.Token{Key: k}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
			v := newRotationValidator(t, iss, jwks.Config{RefreshRateLimit: limit})
			if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{})); err != nil {
				t.Fatalf("token before rotation: %v", err)
			}
			floodStart := time.Now()
			var wg sync.WaitGroup
			for range 50 { // the flood: one on-demand fetch, then one deferred
				wg.Go(func() {
					if _, err := v.Validate(t.Context(), iss.Token(t, authtest.Token{ForeignKey: true, KID: "unknown-kid"})); !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
						t.Errorf("unknown kid: %v", err)
					}
				})
			}
			wg.Wait()
			// One fetch per limit at most: the on-demand one, then one
			// deferred per limit the flood lasted (a loaded -race machine
			// stretches it).
			if got, most := iss.Requests(iss.JWKSURL), 3+int64(time.Since(floodStart)/limit); got < 2 || got > most {
				t.Fatalf("fetches after flood = %d, want 2..%d", got, most)
			}
			before := iss.Requests(iss.JWKSURL)

			// Accepted at all means the deferred refresh ended the wait
			// within its bound (see TestRekeyTwiceWithinRateLimit).
			tok := iss.Token(t, tt.rotate(iss))
			start := time.Now()
			if _, err := v.Validate(t.Context(), tok); err != nil {
				t.Fatalf("new token on first presentation: %v", err)
			}
			t.Logf("new token accepted after %v (limit %v)", time.Since(start), limit)
			if got := iss.Requests(iss.JWKSURL); got != before+1 {
				t.Errorf("fetches after rotation = %d, want %d", got, before+1)
			}
		})
	}
}
