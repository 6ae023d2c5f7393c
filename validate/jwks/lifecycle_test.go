package jwks

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/mcpguard/mcpguard/validate"
)

func TestCloseStopsGoroutines(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	cfg := testConfig(t, f, newClock())
	cfg.RefreshInterval = 10 * time.Millisecond // keep the loop busy
	before := runtime.NumGoroutine()

	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys(t.Context(), "unknown"); err == nil {
		t.Fatal("Keys(unknown) = nil")
	}
	time.Sleep(30 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	fetches := s.stats().Fetches
	eventually(t, 30*time.Second, func() bool { return runtime.NumGoroutine() <= before })

	// A request aborted by Close may still reach the server late, so the
	// server count is read once everything has settled.
	hits := f.hits.Load()
	time.Sleep(100 * time.Millisecond)
	if got := s.stats().Fetches; got != fetches {
		t.Errorf("fetches started after Close: %d -> %d", fetches, got)
	}
	if got := f.hits.Load(); got != hits {
		t.Errorf("server requests after Close settled: %d -> %d", hits, got)
	}
	if _, err := s.Keys(t.Context(), "k1"); err != nil {
		t.Errorf("Keys(k1) after Close = %v; the last set is still served", err)
	}
	if _, err := s.Keys(t.Context(), "other"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) || !errors.Is(err, errClosed) {
		t.Errorf("Keys(other) after Close = %v, want %v and %v", err, validate.Error{Reason: "unknown_key"}, errClosed)
	}
	if err := s.Refresh(t.Context()); !errors.Is(err, errClosed) {
		t.Errorf("Refresh after Close = %v, want %v", err, errClosed)
	}
}

func TestCloseAbortsHangingFetch(t *testing.T) {
	f := newFake(t)
	f.setMode(modeHang)
	cfg := testConfig(t, f, newClock())
	cfg.FetchTimeout = time.Minute
	before := runtime.NumGoroutine()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() bool { return f.hits.Load() == 1 })
	// Close aborts the hanging fetch rather than waiting for its
	// FetchTimeout (a minute): the refresh ends cancelled, not timed out.
	_ = s.Close()
	if h := s.Health(); !errors.Is(h.LastError, context.Canceled) || errors.Is(h.LastError, context.DeadlineExceeded) {
		t.Errorf("last error after Close = %v, want the fetch aborted (context.Canceled)", h.LastError)
	}
	eventually(t, 30*time.Second, func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr error
	}{
		{name: "jwks url", cfg: Config{Issuer: "https://as.example", JWKSURL: "https://as.example/jwks"}},
		{name: "discovery", cfg: Config{Issuer: "https://as.example/t1"}},
		{name: "loopback http", cfg: Config{Issuer: "http://127.0.0.1:1", JWKSURL: "http://127.0.0.1:1/jwks"}},
		{name: "opaque issuer with jwks url", cfg: Config{Issuer: "urn:example:as", JWKSURL: "https://as.example/jwks"}},
		{name: "no issuer", cfg: Config{JWKSURL: "https://as.example/jwks"}, wantErr: ErrConfig},
		{name: "http jwks url", cfg: Config{Issuer: "https://as.example", JWKSURL: "http://as.example/jwks"}, wantErr: ErrConfig},
		{name: "relative jwks url", cfg: Config{Issuer: "https://as.example", JWKSURL: "/jwks"}, wantErr: ErrConfig},
		{name: "http issuer for discovery", cfg: Config{Issuer: "http://as.example"}, wantErr: ErrConfig},
		{name: "issuer with query for discovery", cfg: Config{Issuer: "https://as.example?x=1"}, wantErr: ErrConfig},
		{name: "negative interval", cfg: Config{Issuer: "https://as.example", RefreshInterval: -1}, wantErr: ErrConfig},
		{name: "negative rate limit", cfg: Config{Issuer: "https://as.example", RefreshRateLimit: -1}, wantErr: ErrConfig},
		{name: "negative wait", cfg: Config{Issuer: "https://as.example", WaitTimeout: -1}, wantErr: ErrConfig},
		{name: "negative fetch timeout", cfg: Config{Issuer: "https://as.example", FetchTimeout: -1}, wantErr: ErrConfig},
		{name: "negative max bytes", cfg: Config{Issuer: "https://as.example", MaxBytes: -1}, wantErr: ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantErr == nil {
				tt.cfg.HTTPClient = failingClient() // never reach the network
			}
			s, err := New(tt.cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New = %v, want %v", err, tt.wantErr)
			}
			if s != nil {
				_ = s.Close()
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg, owned := Config{Issuer: "https://as.example"}.withDefaults()
	if !owned || cfg.HTTPClient == nil || cfg.HTTPClient.Timeout != defaultFetchTimeout {
		t.Errorf("default client: owned %v, %+v", owned, cfg.HTTPClient)
	}
	if cfg.RefreshInterval != 15*time.Minute || cfg.RefreshRateLimit != 4*time.Second ||
		cfg.WaitTimeout != 2*time.Second || cfg.FetchTimeout != 10*time.Second || cfg.MaxBytes != 512<<10 {
		t.Errorf("defaults = %+v", cfg)
	}
	if cfg.Storage != nil || cfg.Logger == nil || cfg.Now == nil { // a nil Storage mirrors nothing
		t.Errorf("defaults left nil, or a Storage made up: %+v", cfg)
	}
	st := jwkset.NewMemoryStorage()
	lg := slog.New(slog.DiscardHandler)
	cfg, owned = Config{Issuer: "x", Storage: st, Logger: lg, HTTPClient: failingClient()}.withDefaults()
	if owned || cfg.Storage != st || cfg.Logger != lg {
		t.Errorf("given values replaced: owned %v", owned)
	}
}
