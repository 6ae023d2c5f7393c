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

// limiterClock is a manual clock for the jwks rate limit only.
type limiterClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *limiterClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *limiterClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRotationAcceptedWithinFiveSeconds runs a real validator over a real
// loopback JWKS (authtest) with the default rate limit and a pinned clock
// for it: right after an on-demand refresh (a flood of unknown kids), the
// authorization server publishes a new kid, or new material under its
// current kid. The first token signed with it is refused at once; the same
// token is accepted once 5 s have passed, at the price of exactly one more
// fetch, and a second flood inside the interval costs nothing.
func TestRotationAcceptedWithinFiveSeconds(t *testing.T) {
	if jwks.DefaultRefreshRateLimit > 5*time.Second {
		t.Errorf("DefaultRefreshRateLimit = %v, want at most 5s", jwks.DefaultRefreshRateLimit)
	}
	tests := []struct {
		name   string
		rotate func(iss *authtest.Issuer) authtest.TokenOption
	}{
		{"new kid", func(iss *authtest.Issuer) authtest.TokenOption {
			iss.Rotate()
			return nil
		}},
		{"new material under the same kid", func(iss *authtest.Issuer) authtest.TokenOption {
			k := authtest.GenerateKey(jose.ES256, authtest.KIDES256)
			iss.RemoveKey(authtest.KIDES256)
			iss.AddKey(k)
			return authtest.SignWith(k)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
			clk := &limiterClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
			src, err := jwks.New(jwks.Config{
				Issuer:          iss.URL(),
				JWKSURL:         iss.JWKSURL(),
				RefreshInterval: time.Hour, // no periodic refresh during the test
				Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
				Now:             clk.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = src.Close() })
			v, err := validate.New(validate.Config{
				Issuers:   []validate.Issuer{{Issuer: iss.URL(), Keys: src}},
				Audiences: []string{iss.Audience()},
				Now:       iss.Now,
				CacheSize: -1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Validate(t.Context(), iss.Token(t)); err != nil {
				t.Fatalf("token before rotation: %v", err)
			}
			for range 50 { // the flood: one on-demand fetch
				if _, err := v.Validate(t.Context(), iss.Token(t, authtest.UnknownKID())); !errors.Is(err, validate.ErrKeyNotFound) {
					t.Fatalf("unknown kid: %v", err)
				}
			}
			if got := iss.JWKSFetches(); got != 2 {
				t.Fatalf("fetches after flood = %d, want 2", got)
			}

			var opts []authtest.TokenOption
			if o := tt.rotate(iss); o != nil {
				opts = append(opts, o)
			}
			tok := iss.Token(t, opts...)
			start := time.Now()
			if _, err := v.Validate(t.Context(), tok); err == nil {
				t.Fatal("new token accepted inside the rate-limit interval; the test does not exercise the limit")
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refused validation took %v, want at once", d)
			}
			clk.Advance(5 * time.Second)
			if _, err := v.Validate(t.Context(), tok); err != nil {
				t.Fatalf("new token 5 s after first seen: %v", err)
			}
			if got := iss.JWKSFetches(); got != 3 {
				t.Errorf("fetches after rotation = %d, want 3", got)
			}
			for range 50 {
				_, _ = v.Validate(t.Context(), iss.Token(t, authtest.UnknownKID()))
			}
			if got := iss.JWKSFetches(); got != 3 {
				t.Errorf("fetches after a second flood in the same interval = %d, want 3", got)
			}
		})
	}
}
