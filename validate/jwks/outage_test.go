package jwks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/validate"
)

func TestOutageAtStartRecoversByItself(t *testing.T) {
	k1 := ecJWK(t, "k1")
	f := newFake(t, k1)
	f.setStatus(503, "")
	s := newSource(t, testConfig(t, f, newClock()))

	// The call waits for the first fetch and returns its outcome; one
	// that ran out its WaitTimeout instead says errWaitTimeout.
	_, err := s.Keys(t.Context(), "k1")
	if !errors.Is(err, validate.ErrKeysUnavailable) || !errors.Is(err, fetch.ErrStatus) || errors.Is(err, errWaitTimeout) {
		t.Fatalf("Keys during outage = %v, want %v wrapping %v (the first fetch's outcome)", err, validate.ErrKeysUnavailable, fetch.ErrStatus)
	}

	f.setKeys(t, k1) // the AS comes back; nobody calls Refresh
	eventually(t, 30*time.Second, func() bool { return s.stats().Keys == 1 })
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Fatalf("Keys after recovery = %v", err)
	}
	st := s.stats()
	if st.Failures < 1 || st.LastError != nil || st.LastSuccess.IsZero() {
		t.Errorf("Stats after recovery = %+v", st)
	}
	t.Logf("recovered after %d fetches (%d failed)", st.Fetches, st.Failures)
}

func TestOutageMidRun(t *testing.T) {
	clk := newClock()
	f := newFake(t, ecJWK(t, "k1"))
	s := newSource(t, noWait(testConfig(t, f, clk)))
	waitFirst(t, s)
	f.setStatus(500, "")

	// The first unknown kid triggers a (failing) refresh; later ones in the
	// same interval fail at once: one that waited (for the deferred
	// refresh, an hour away, or WaitTimeout, an hour) would end with its
	// context instead.
	if _, err := s.Keys(t.Context(), "new"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
		t.Fatalf("Keys(new) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
	}
	ctx := eventCtx(t)
	for range 100 {
		_, err := s.Keys(ctx, "other")
		if !errors.Is(err, validate.Error{Reason: "unknown_key"}) || !errors.Is(err, errRateLimited) || errors.Is(err, errWaitTimeout) || ctx.Err() != nil {
			t.Fatalf("Keys(other) = %v, want %v and %v at once", err, validate.Error{Reason: "unknown_key"}, errRateLimited)
		}
		if _, err := s.Keys(t.Context(), "k1"); err != nil {
			t.Fatalf("Keys(k1) during outage = %v; the last good set must be kept", err)
		}
	}
	if got := f.hits.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2", got)
	}
	if st := s.stats(); st.Keys != 1 || st.Failures != 1 || !errors.Is(st.LastError, fetch.ErrStatus) {
		t.Errorf("stats = %+v", st)
	}
}

func TestBadResponsesKeepGoodSet(t *testing.T) {
	encOnly := jose.JSONWebKey{Key: ecJWK(t, "e").Key, KeyID: "e", Use: "enc"}
	encJSON, err := encOnly.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const maxBytes = 64 << 10
	huge := `{"keys":[],"pad":"` + strings.Repeat("a", maxBytes) + `"}`
	tests := []struct {
		name    string
		set     func(f *fakeJWKS)
		wantErr error
	}{
		{name: "500", set: func(f *fakeJWKS) { f.setStatus(500, "") }, wantErr: fetch.ErrStatus},
		{name: "502", set: func(f *fakeJWKS) { f.setStatus(502, "") }, wantErr: fetch.ErrStatus},
		{name: "429 with Retry-After", set: func(f *fakeJWKS) { f.setStatus(429, "3600") }, wantErr: fetch.ErrStatus},
		{name: "404", set: func(f *fakeJWKS) { f.setMode(modeNotFound) }, wantErr: fetch.ErrStatus},
		{name: "garbage", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte("\x00\xffnot json")) }, wantErr: errInvalidSet},
		{name: "empty body", set: func(f *fakeJWKS) { f.setRaw("application/json", nil) }, wantErr: errInvalidSet},
		{name: "null", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte("null")) }, wantErr: errInvalidSet},
		{name: "array", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte("[]")) }, wantErr: errInvalidSet},
		{name: "no keys member", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte(`{"kays":[]}`)) }, wantErr: errInvalidSet},
		{name: "keys not an array", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte(`{"keys":"x"}`)) }, wantErr: errInvalidSet},
		{name: "keys null", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte(`{"keys":null}`)) }, wantErr: errInvalidSet},
		{name: "empty set", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte(`{"keys":[]}`)) }, wantErr: errNoUsableKeys},
		{name: "only unusable keys", set: func(f *fakeJWKS) {
			f.setRaw("application/jwk-set+json", []byte(`{"keys":[`+string(encJSON)+`,{"kty":"oct","kid":"s","k":"AAAA"}]}`))
		}, wantErr: errNoUsableKeys},
		{name: "text/plain", set: func(f *fakeJWKS) { f.setRaw("text/plain", []byte(`{"keys":[]}`)) }, wantErr: fetch.ErrContentType},
		{name: "no content type", set: func(f *fakeJWKS) { f.setRaw("", []byte(`{"keys":[]}`)) }, wantErr: fetch.ErrContentType},
		{name: "html", set: func(f *fakeJWKS) { f.setRaw("text/html", []byte(`<html>`)) }, wantErr: fetch.ErrContentType},
		{name: "huge body", set: func(f *fakeJWKS) { f.setRaw("application/json", []byte(huge)) }, wantErr: fetch.ErrTooLarge},
		{name: "endless body", set: func(f *fakeJWKS) { f.setMode(modeEndless) }, wantErr: fetch.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/mid-run", func(t *testing.T) {
			clk := newClock()
			f := newFake(t, ecJWK(t, "k1"))
			cfg := testConfig(t, f, clk)
			cfg.MaxBytes = maxBytes
			cfg.Storage = jwkset.NewMemoryStorage()
			s := newSource(t, cfg)
			waitFirst(t, s)

			tt.set(f)
			// The refresh's own error: Refresh returned when it ended,
			// not on its WaitTimeout (errWaitTimeout).
			err := s.Refresh(t.Context())
			if !errors.Is(err, tt.wantErr) || errors.Is(err, errWaitTimeout) {
				t.Fatalf("Refresh = %v, want %v", err, tt.wantErr)
			}
			if _, err := s.Keys(t.Context(), "k1"); err != nil {
				t.Errorf("Keys(k1) after bad response = %v; the good set must survive", err)
			}
			if st := s.stats(); st.Keys != 1 || st.Failures != 1 {
				t.Errorf("stats = %+v", st)
			}
			if n, _ := cfg.Storage.KeyReadAll(t.Context()); len(n) != 1 {
				t.Errorf("storage holds %d keys, want 1", len(n))
			}
		})
		t.Run(tt.name+"/at start", func(t *testing.T) {
			f := newFake(t)
			tt.set(f)
			cfg := testConfig(t, f, newClock())
			cfg.MaxBytes = maxBytes
			s := newSource(t, cfg)
			_, err := s.Keys(t.Context(), "k1")
			if !errors.Is(err, validate.ErrKeysUnavailable) || !errors.Is(err, tt.wantErr) {
				t.Errorf("Keys = %v, want %v wrapping %v", err, validate.ErrKeysUnavailable, tt.wantErr)
			}
		})
	}
}

func TestRetryAfterDelaysBackgroundRetry(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	f.setStatus(429, "1")
	cfg := testConfig(t, f, newClock())
	cfg.RefreshRateLimit = 20 * time.Millisecond // backoff would retry after 20ms without Retry-After
	s := newSource(t, cfg)
	waitFirst(t, s)
	// The loop's next attempt is scheduled after Retry-After, read on the
	// pinned clock (Health.NextRefresh is Now plus the delay chosen).
	var next time.Duration
	eventually(t, eventWait, func() bool {
		next = s.Health().NextRefresh.Sub(cfg.Now())
		return next > 0
	})
	if next != time.Second {
		t.Errorf("next background attempt in %v, want Retry-After (1s), not the backoff (%v)", next, cfg.RefreshRateLimit)
	}
	if got := f.hits.Load(); got != 1 {
		t.Errorf("fetches within Retry-After = %d, want 1", got)
	}
	f.setKeys(t, ecJWK(t, "k1"))
	eventually(t, 30*time.Second, func() bool { return s.stats().Keys == 1 })
}

func TestNextDelay(t *testing.T) {
	const (
		minB     = time.Second
		limit    = 30 * time.Second
		interval = 15 * time.Minute
	)
	fail := errors.New("boom")
	tests := []struct {
		name               string
		err                error
		backoff            time.Duration
		wantDelay, wantNxt time.Duration
	}{
		{name: "success", backoff: 8 * time.Second, wantDelay: interval, wantNxt: minB},
		{name: "first failure", err: fail, backoff: minB, wantDelay: minB, wantNxt: 2 * time.Second},
		{name: "doubling", err: fail, backoff: 8 * time.Second, wantDelay: 8 * time.Second, wantNxt: 16 * time.Second},
		{name: "capped at limit", err: fail, backoff: 16 * time.Second, wantDelay: 16 * time.Second, wantNxt: limit},
		{name: "stays at limit", err: fail, backoff: limit, wantDelay: limit, wantNxt: limit},
		{name: "retry-after longer", err: &fetch.StatusError{Code: 429, RetryAfter: time.Minute}, backoff: minB, wantDelay: time.Minute, wantNxt: 2 * time.Second},
		{name: "retry-after shorter", err: &fetch.StatusError{Code: 503, RetryAfter: time.Millisecond}, backoff: 4 * time.Second, wantDelay: 4 * time.Second, wantNxt: 8 * time.Second},
		{name: "retry-after capped at interval", err: &fetch.StatusError{Code: 429, RetryAfter: 24 * time.Hour}, backoff: minB, wantDelay: interval, wantNxt: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, n := nextDelay(tt.err, tt.backoff, minB, limit, interval)
			if d != tt.wantDelay || n != tt.wantNxt {
				t.Errorf("nextDelay = %v, %v; want %v, %v", d, n, tt.wantDelay, tt.wantNxt)
			}
		})
	}
}
