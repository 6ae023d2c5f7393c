package cimd

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestCacheLifetime(t *testing.T) {
	const lo, hi = 5 * time.Minute, 24 * time.Hour
	tests := []struct {
		name    string
		values  []string
		wantTTL time.Duration
		wantOK  bool
	}{
		{"absent", nil, lo, true},
		{"max-age in range", []string{"max-age=600"}, 10 * time.Minute, true},
		{"max-age zero clamps up", []string{"max-age=0"}, lo, true},
		{"max-age huge clamps down", []string{"max-age=999999999"}, hi, true},
		{"max-age overflow", []string{"max-age=99999999999999999999999999"}, hi, true},
		{"max-age exactly max", []string{"max-age=86400"}, hi, true},
		{"quoted", []string{`max-age="600"`}, 10 * time.Minute, true},
		{"uppercase", []string{"MAX-AGE=600"}, 10 * time.Minute, true},
		{"spaces", []string{" public ,  max-age=600 "}, 10 * time.Minute, true},
		{"negative", []string{"max-age=-1"}, lo, true},
		{"plus sign", []string{"max-age=+600"}, lo, true},
		{"garbage", []string{"max-age=abc"}, lo, true},
		{"empty value", []string{"max-age="}, lo, true},
		{"fraction", []string{"max-age=1.5"}, lo, true},
		{"conflicting", []string{"max-age=600, max-age=60"}, lo, true},
		{"conflicting lines", []string{"max-age=600", "max-age=60"}, lo, true},
		{"repeated same", []string{"max-age=600, max-age=600"}, 10 * time.Minute, true},
		{"no-store", []string{"no-store"}, 0, false},
		{"no-store with max-age", []string{"max-age=600, no-store"}, 0, false},
		{"no-cache", []string{"no-cache"}, 0, false},
		{"no-cache with fields", []string{`no-cache="set-cookie"`}, 0, false},
		{"no-store on second line", []string{"max-age=600", "NO-STORE"}, 0, false},
		{"private ignored", []string{"private, max-age=600"}, 10 * time.Minute, true},
		{"s-maxage ignored", []string{"s-maxage=60"}, lo, true},
		{"junk", []string{",,=,=="}, lo, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("Cache-Control", v)
			}
			ttl, ok := cacheLifetime(h, lo, hi)
			if ttl != tt.wantTTL || ok != tt.wantOK {
				t.Errorf("cacheLifetime(%q) = %v, %v; want %v, %v", tt.values, ttl, ok, tt.wantTTL, tt.wantOK)
			}
		})
	}
}

// TestResolveCacheHeaders checks over TLS that a document is served from
// the cache for exactly its clamped lifetime.
func TestResolveCacheHeaders(t *testing.T) {
	tests := []struct {
		cacheControl string
		ttl          time.Duration // 0: not cached
	}{
		{"", defaultMinCacheTTL},
		{"max-age=0", defaultMinCacheTTL},
		{"max-age=3600", time.Hour},
		{"max-age=999999999", defaultMaxCacheTTL},
		{"max-age=-5", defaultMinCacheTTL},
		{"max-age=soon", defaultMinCacheTTL},
		{"no-store", 0},
		{"no-cache", 0},
	}
	mux := http.NewServeMux()
	for i, tt := range tests {
		h := map[string]string{}
		if tt.cacheControl != "" {
			h["Cache-Control"] = tt.cacheControl
		}
		mux.Handle("/"+strconv.Itoa(i), response{body: validDoc, header: h})
	}
	s := newTLSServer(t, mux)
	for i, tt := range tests {
		t.Run(tt.cacheControl, func(t *testing.T) {
			clk := newClock()
			r := mustResolver(t, testResolverConfig(s, clk))
			id := s.URL + "/" + strconv.Itoa(i)
			before := s.hits.Load()
			resolve := func() {
				t.Helper()
				if _, err := r.Resolve(context.Background(), id); err != nil {
					t.Fatal(err)
				}
			}
			resolve() // fetched, and usable even with no-store
			if tt.ttl == 0 {
				resolve()
				if got := s.hits.Load() - before; got != 2 {
					t.Errorf("fetches = %d, want 2 (not cached)", got)
				}
				return
			}
			clk.Advance(tt.ttl - time.Second)
			resolve()
			if got := s.hits.Load() - before; got != 1 {
				t.Errorf("fetches before expiry = %d, want 1", got)
			}
			clk.Advance(time.Second)
			resolve()
			if got := s.hits.Load() - before; got != 2 {
				t.Errorf("fetches after expiry = %d, want 2", got)
			}
		})
	}
}

func TestResolveCacheIsolationAndBounds(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(s, newClock())
	cfg.CacheSize = 2
	r := mustResolver(t, cfg)
	ctx := context.Background()

	d, err := r.Resolve(ctx, s.URL+"/a")
	wantErrs(t, err)
	d.RedirectURIs[0] = "https://evil.example/cb" // must not reach the cache
	d2, err := r.Resolve(ctx, s.URL+"/a")
	wantErrs(t, err)
	if d2.RedirectURIs[0] != "http://127.0.0.1:3000/callback" {
		t.Errorf("cache entry was modified through a returned document")
	}
	// The key is the exact client_id: a different case is another entry.
	_, _ = r.Resolve(ctx, s.URL+"/A")
	// Evicts /A: /a was read since it was added, so it gets CLOCK's
	// second chance (internal/fairlru).
	_, _ = r.Resolve(ctx, s.URL+"/b")
	if n := r.cache.len(); n != 2 {
		t.Errorf("cache holds %d entries, want 2", n)
	}
	before := s.hits.Load()
	_, _ = r.Resolve(ctx, s.URL+"/A")
	if s.hits.Load() != before+1 {
		t.Errorf("evicted entry was not refetched")
	}
}
