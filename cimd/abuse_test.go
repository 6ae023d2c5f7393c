package cimd

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// gzipBomb returns a small gzip stream that inflates to about mib MiB:
// one compressed MiB, repeated as concatenated gzip members.
func gzipBomb(t *testing.T, mib int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 1<<20))
	_ = zw.Close()
	var b bytes.Buffer
	for range mib {
		b.Write(member.Bytes())
	}
	return b.Bytes()
}

func TestResolveHostileBodies(t *testing.T) {
	// Smaller than the cap on the wire, so only a cap applied after
	// decompression can stop it.
	bomb := gzipBomb(t, 4)
	if len(bomb) >= defaultMaxBytes {
		t.Fatalf("bomb is %d bytes on the wire, want under %d", len(bomb), defaultMaxBytes)
	}
	padded := `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"pad":"` + strings.Repeat("p", 6<<10) + `"}`
	mux := http.NewServeMux()
	mux.Handle("/oversized", response{body: padded})
	mux.HandleFunc("/oversized-declared", func(w http.ResponseWriter, r *http.Request) {
		b := strings.ReplaceAll(padded, "{{URL}}", "https://"+r.Host+r.URL.Path)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		response{body: b}.ServeHTTP(w, r)
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"client_id":"`))
		chunk := bytes.Repeat([]byte("a"), 1<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/gzip-bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb)
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"client_id":`))
		w.(http.Flusher).Flush()
		for r.Context().Err() == nil { // a byte every 50 ms: never done
			time.Sleep(50 * time.Millisecond)
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/slow-headers", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the client gave up: only its deadline can end it
		// Never any answer: returning would send an implicit 200 without
		// Content-Type, which a client still waiting reads (a clean run
		// once got "unexpected content type" when the request's context
		// ended early); aborting resets the connection.
		panic(http.ErrAbortHandler)
	})
	s := newTLSServer(t, mux)
	// The error says what stopped each fetch, so no wall clock is
	// compared: the size caps must stop a body long before a Timeout no
	// loaded machine reaches (errTooLarge, not errFetch); the slow answers
	// never end by themselves, so only the short Timeout can end them
	// (errFetch wrapping context.DeadlineExceeded).
	cfg := testResolverConfig(s, newClock())
	cfg.Timeout = time.Minute
	capped := mustResolver(t, cfg)
	cfg.Timeout = 300 * time.Millisecond
	timed := mustResolver(t, cfg)

	tests := []struct {
		path string
		r    *Resolver
		want []error
	}{
		{"/oversized", capped, []error{errTooLarge}},
		{"/oversized-declared", capped, []error{errTooLarge}},
		{"/endless", capped, []error{errTooLarge}},
		{"/gzip-bomb", capped, []error{errTooLarge}},
		{"/slow-body", timed, []error{errFetch, context.DeadlineExceeded}},
		{"/slow-headers", timed, []error{errFetch, context.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := tt.r.Resolve(context.Background(), s.URL+tt.path)
			wantErrs(t, err, tt.want...)
		})
	}
}

// TestResolveNeverFetchesDocumentURLs: jwks_uri, logo_uri, client_uri,
// tos_uri and policy_uri point at a live server the resolver could reach
// and trusts; it must never be contacted.
func TestResolveNeverFetchesDocumentURLs(t *testing.T) {
	other := newTLSServer(t, response{body: `{"keys":[]}`})
	u := other.URL
	doc := `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],` +
		`"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"` + u + `/jwks",` +
		`"logo_uri":"` + u + `/logo.png","client_uri":"` + u + `/","tos_uri":"` + u + `/tos","policy_uri":"` + u + `/policy"}`
	s := newTLSServer(t, response{body: doc})
	cfg := testResolverConfig(s, newClock())
	cfg.RootCAs.AddCert(other.Certificate())
	r := mustResolver(t, cfg)
	d, err := r.Resolve(context.Background(), s.URL+"/client.json")
	wantErrs(t, err)
	if d.JWKSURI != u+"/jwks" {
		t.Errorf("JWKSURI = %q", d.JWKSURI)
	}
	if n := other.conns.n.Load(); n != 0 {
		t.Errorf("document URLs got %d connections, want 0", n)
	}
}

func TestResolveSingleFlight(t *testing.T) {
	release := make(chan struct{})
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		response{body: validDoc}.ServeHTTP(w, r)
	}))
	r := mustResolver(t, testResolverConfig(s, newClock()))
	id := s.URL + "/client.json"
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := r.Resolve(context.Background(), id)
			errs <- err
		})
	}
	// All twenty wait on the one fetch the handler holds (with no
	// single flight, twenty fetches would be held there instead).
	waitUntil(t, "20 calls waiting on the fetch", func() bool { return r.waits.flight.Load() == 20 })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		wantErrs(t, err)
	}
	if got := s.hits.Load(); got != 1 {
		t.Errorf("hits = %d, want 1", got)
	}
}

func TestResolveConcurrencyCap(t *testing.T) {
	var inFlight, peak atomic.Int64
	release := make(chan struct{})
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		response{body: validDoc}.ServeHTTP(w, r)
	}))
	cfg := testResolverConfig(s, newClock())
	cfg.MaxConcurrentFetches = 2
	r := mustResolver(t, cfg)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 10 {
		wg.Go(func() {
			if _, err := r.Resolve(context.Background(), fmt.Sprintf("%s/c%d.json", s.URL, i)); err != nil {
				failed.Add(1)
			}
		})
	}
	// Two fetches reach the server and the other eight queue for a slot;
	// a wider cap lets a third through, which ends the wait too.
	waitUntil(t, "2 fetches in flight and 8 queued", func() bool {
		return inFlight.Load() > 2 || inFlight.Load() == 2 && r.waits.slot.Load() == 8
	})
	if got := inFlight.Load(); got != 2 {
		t.Errorf("in flight = %d, want 2", got)
	}
	close(release)
	wg.Wait()
	if peak.Load() != 2 || failed.Load() != 0 {
		t.Errorf("peak = %d, failed = %d; want 2, 0", peak.Load(), failed.Load())
	}
}

func TestResolveConcurrencyCapDeadline(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(s, newClock())
	cfg.MaxConcurrentFetches = 1
	// The client is built with a Timeout far beyond any TLS handshake on a
	// loaded machine; the wait for a slot is bounded by r.cfg.Timeout,
	// shortened for the first Resolve only. Nothing here compares a wall
	// clock: the first Resolve can only end by its deadline (the slot is
	// never freed while it waits), the second only by success.
	cfg.Timeout = time.Minute
	r := mustResolver(t, cfg)
	r.cfg.Timeout = 100 * time.Millisecond
	r.slots <- struct{}{} // a fetch that never ends holds the only slot
	_, err := r.Resolve(context.Background(), s.URL+"/a.json")
	wantErrs(t, err, errRateLimited)
	if s.hits.Load() != 0 {
		t.Errorf("server was contacted without a slot")
	}
	<-r.slots
	if n := len(r.slots); n != 0 {
		t.Fatalf("slots held after the refused wait = %d, want 0", n)
	}
	r.cfg.Timeout = time.Minute
	_, err = r.Resolve(context.Background(), s.URL+"/a.json")
	wantErrs(t, err)
}

// TestResolveFlood throws 500 distinct client_ids at one host at once.
// The per-host bucket lets its burst through and refuses the rest
// immediately: before any admitted fetch is answered.
func TestResolveFlood(t *testing.T) {
	// The admitted fetches are answered only once every refused request
	// has returned: a refusal that waited for a fetch (or a slot) would
	// hold the flood until the test's own timeout. State, not a wall clock.
	var limited atomic.Int64
	refusedAll := make(chan struct{})
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-refusedAll:
		case <-r.Context().Done():
			return
		}
		response{body: validDoc}.ServeHTTP(w, r)
	}))
	cfg := testResolverConfig(s, newClock())
	cfg.HostFetchRate = defaultHostFetchRate
	cfg.HostFetchBurst = defaultHostFetchBurst
	cfg.GlobalFetchRate = defaultGlobalFetchRate
	cfg.MaxConcurrentFetches = 4
	cfg.Timeout = time.Minute // the admitted fetches wait for the refusals
	r := mustResolver(t, cfg)
	var ok, other atomic.Int64
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() {
			_, err := r.Resolve(context.Background(), fmt.Sprintf("%s/flood/%d.json", s.URL, i))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, errRateLimited):
				if limited.Add(1) == 500-defaultHostFetchBurst {
					close(refusedAll)
				}
			default:
				other.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != defaultHostFetchBurst || limited.Load() != 500-defaultHostFetchBurst || other.Load() != 0 {
		t.Errorf("ok/limited/other = %d/%d/%d, want %d/%d/0", ok.Load(), limited.Load(), other.Load(), defaultHostFetchBurst, 500-defaultHostFetchBurst)
	}
	if hits := s.hits.Load(); hits != defaultHostFetchBurst {
		t.Errorf("server saw %d requests, want %d", hits, defaultHostFetchBurst)
	}
}

// TestResolveGlobalLimit spreads requests over many loopback hosts, so
// only the global bucket can stop them. Nothing listens on 127.0.0.N for
// N > 1, so the admitted fetches fail fast with errFetch.
func TestResolveGlobalLimit(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(s, newClock())
	cfg.GlobalFetchRate = rate.Every(time.Hour)
	cfg.GlobalFetchBurst = 5
	r := mustResolver(t, cfg)
	var fetched, limited int
	for i := 2; i < 52; i++ {
		_, err := r.Resolve(context.Background(), fmt.Sprintf("https://127.0.%d.1:%d/c.json", i, s.port())) // one network each
		switch {
		case errors.Is(err, errRateLimited):
			limited++
		case errors.Is(err, errFetch):
			fetched++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if fetched != 5 || limited != 45 {
		t.Errorf("fetched/limited = %d/%d, want 5/45", fetched, limited)
	}
}

func TestHostLimiterMapIsBounded(t *testing.T) {
	r := mustResolver(t, ResolverConfig{MaxHosts: 4, HostFetchBurst: 1, HostFetchRate: rate.Every(time.Hour)})
	for i := range 100 {
		_, _ = r.Resolve(context.Background(), fmt.Sprintf("https://10.0.0.%d/c.json", i))
	}
	if n := r.limits.keyed.Len(); n != 4 {
		t.Errorf("per-host limiters = %d, want 4", n)
	}
}

// waitUntil polls cond until it holds, failing after a deadline no loaded
// machine reaches.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
