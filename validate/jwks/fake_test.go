package jwks

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// mode is how the fake JWKS endpoint answers.
type mode int

const (
	modeOK       mode = iota // the current key set
	modeStatus               // status (with Retry-After if set)
	modeHang                 // never answers until the client gives up
	modeRaw                  // raw body with ctype
	modeEndless              // 200 JSON, body never ends
	modeNotFound             // 404
)

// fakeJWKS is a controllable JWKS server with optional AS metadata.
type fakeJWKS struct {
	srv     *httptest.Server
	hits    atomic.Int64 // JWKS requests
	mdHits  atomic.Int64 // metadata requests
	release chan struct{}

	mu         sync.Mutex
	mode       mode
	status     int
	retryAfter string
	raw        []byte
	ctype      string
	set        []byte        // current {"keys":[...]}
	delay      time.Duration // before answering (modeOK)
	gate       chan struct{} // if set (modeOK), signal entered and wait for it to close
	entered    chan struct{}
	metaIssuer string // "" => no metadata served
}

func newFake(t *testing.T, keys ...jose.JSONWebKey) *fakeJWKS {
	t.Helper()
	f := &fakeJWKS{release: make(chan struct{})}
	f.setKeys(t, keys...)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.release)
		f.srv.Close()
	})
	return f
}

func (f *fakeJWKS) url() string { return f.srv.URL + "/jwks" }

func (f *fakeJWKS) setKeys(t *testing.T, keys ...jose.JSONWebKey) {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set, f.mode = b, modeOK
}

func (f *fakeJWKS) setMode(m mode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
}

func (f *fakeJWKS) setStatus(code int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.status, f.retryAfter = modeStatus, code, retryAfter
}

func (f *fakeJWKS) setRaw(ctype string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.ctype, f.raw = modeRaw, ctype, body
}

func (f *fakeJWKS) setDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// setGate makes the next JWKS request signal entered and then wait until
// gate is closed.
func (f *fakeJWKS) setGate(gate, entered chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.entered = gate, entered
}

func (f *fakeJWKS) setMetaIssuer(iss string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.metaIssuer = iss
}

func (f *fakeJWKS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	m, status, ra, raw, ctype, set, delay, metaIss := f.mode, f.status, f.retryAfter, f.raw, f.ctype, f.set, f.delay, f.metaIssuer
	gate, entered := f.gate, f.entered
	f.mu.Unlock()

	if r.URL.Path == "/.well-known/oauth-authorization-server" {
		f.mdHits.Add(1)
		if metaIss == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": metaIss, "jwks_uri": f.url(), "response_types_supported": []string{"code"}})
		return
	}
	if r.URL.Path != "/jwks" {
		http.NotFound(w, r)
		return
	}
	f.hits.Add(1)
	switch m {
	case modeOK:
		if gate != nil {
			entered <- struct{}{}
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	case modeStatus:
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(status)
	case modeHang:
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
	case modeRaw:
		if ctype == "" {
			w.Header()["Content-Type"] = nil
		} else {
			w.Header().Set("Content-Type", ctype)
		}
		_, _ = w.Write(raw)
	case modeEndless:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"keys":[{"kid":"`)
		chunk := bytes.Repeat([]byte("a"), 8192)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case modeNotFound:
		http.NotFound(w, r)
	}
}

// ecJWK returns a fresh P-256 public key with kid and alg ES256.
func ecJWK(t *testing.T, kid string) jose.JSONWebKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
}

// fakeClock is a manual Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testConfig is a Config for f: no periodic refresh during the test, a
// frozen clock for the rate limit, and generous wait and fetch timeouts so
// that fetch-count assertions hold on a loaded machine. Latency tests set
// their own small WaitTimeout.
func testConfig(t *testing.T, f *fakeJWKS, clk *fakeClock) Config {
	t.Helper()
	return Config{
		Issuer:           f.srv.URL,
		JWKSURL:          f.url(),
		RefreshInterval:  time.Hour,
		RefreshRateLimit: 100 * time.Millisecond,
		WaitTimeout:      5 * time.Second,
		FetchTimeout:     10 * time.Second,
		MaxBytes:         64 << 10,
		Logger:           slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:              clk.Now,
		// The pinned clock never lets a deferred refresh fire, so calls the
		// rate limit refuses fail at once here; realClockConfig waits.
		DeferredWaiters: -1,
	}
}

// newSource starts a Source and closes it at cleanup.
func newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitFirst waits (bounded) until the first refresh has ended.
func waitFirst(t *testing.T, s *Source) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool { return s.stats().Fetches >= 1 && s.idle() })
}

// idle reports that no refresh is running.
func (s *Source) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running == nil
}

// eventWait bounds a wait for something the source does by itself, or
// for a call that must return: generous, so that only a bug, never a
// loaded machine, exhausts it.
const eventWait = 30 * time.Second

// eventCtx is a context that ends after eventWait. With noWait, a call
// that waited (for a deferred refresh or its WaitTimeout) rather than
// returning at once ends with its error instead of hanging the test.
func eventCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), eventWait)
	t.Cleanup(cancel)
	return ctx
}

// noWait makes every wait of cfg outlast eventWait: a deferred refresh
// armed by a refusal fires an hour later at the earliest, and WaitTimeout
// is an hour, so a call that waits at all is told apart from one that
// does not by its outcome (its eventCtx ends), not by its latency. The
// pinned clock opens the rate limit when the test advances it by
// RefreshRateLimit.
func noWait(cfg Config) Config {
	cfg.RefreshRateLimit = time.Hour
	cfg.WaitTimeout = time.Hour
	return cfg
}

// eventually polls cond every 5 ms for at most d.
func eventually(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failingClient never touches the network.
func failingClient() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("no network in this test")
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
