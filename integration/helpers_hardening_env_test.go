package integration

// Helpers for the hardening suites: hostile_test.go and its case files
// hostile_*_test.go (hostile tokens and requests), faults_test.go
// (authorization-server faults) and load_test.go (guarded load test). They
// are split by concern: helpers_hardening_env_test.go (the example server,
// its issuer and key source, bounded waits), helpers_hardening_request_test.go
// (requests and answers), helpers_hardening_assert_test.go (exact expected
// answers) and helpers_hardening_forge_test.go (hand-assembled tokens and the
// attacker's server). Every identifier in them starts with "hx" so that it
// cannot collide with the e2e helpers in env_test.go.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/proxy"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const (
	// hxBaseScope is the example server's base scope (server.Config.Scopes).
	hxBaseScope = "mcp:tools"
	// hxRevision is the MCP revision of every hand-built request: its
	// requests are self-contained and its 403 challenges list only the
	// operation's scopes, so every expected challenge is a fixed string.
	hxRevision = "2026-07-28"
	// hxRequestID is the request header carrying the request number that
	// hxBodyReads keys on.
	hxRequestID = "X-Hx-Request"
	// hxPoll is the sleep between polls of bounded wait loops.
	hxPoll = 10 * time.Millisecond
)

// hxEnvConfig configures newHxEnv.
type hxEnvConfig struct {
	// Issuer configures the authtest issuer; Audience is always set to the
	// MCP endpoint.
	Issuer authtest.IssuerConfig
	// JWKS configures the key source. Issuer and JWKSURL are always set
	// from the issuer. Zero durations get the hx defaults below (not the
	// package defaults): RefreshInterval 1h (no background refresh during
	// a test), RefreshRateLimit 10s, WaitTimeout 1s, FetchTimeout 2s.
	JWKS jwks.Config
	// WallClockJWKS gives the key source the wall clock (jwks.Config.Now
	// nil). By default it shares the issuer's pinned clock, so that its
	// on-demand rate limit opens only when the test calls Advance: fetch
	// counts are then exact, whatever the machine's speed.
	WallClockJWKS bool
	// Validate is copied into the validator's config; Issuers, Audiences,
	// TenantClaim and Now are always set.
	Validate validate.Config
	// BeforeStart runs after the issuer exists and before the key source
	// starts its first fetch: publish extra keys or set a fault here.
	BeforeStart func(iss *authtest.Issuer)
	// Proxy puts mcpguard proxy (proxy.New) at the MCP endpoint instead of
	// the example server: it validates the issuer's tokens with its own
	// key source (the issuer's JWKS URL, refreshed hourly, on the issuer's
	// pinned clock) and forwards to the example server on another
	// loopback port, which trusts only the proxy's assertions. The env's
	// own key source and validator then serve the wantErr checks only.
	// Validate must be zero.
	Proxy bool
}

// hxEnv is the example MCP server (server.New) on 127.0.0.1, validating
// tokens of one authtest issuer through a remote JWKS (validate/jwks).
type hxEnv struct {
	iss     *authtest.Issuer
	keys    *jwks.Source
	val     *validate.Validator
	srv     *server.Server
	ts      *httptest.Server
	jwksCfg jwks.Config // as given to jwks.New
	mcpURL  string      // the resource identifier and MCP endpoint
	metaURL string      // resource_metadata of every challenge
	client  *http.Client
	reads   hxBodyReads
	nextID  atomic.Int64
	// refreshes counts the key source's ended refreshes (its
	// jwks.Config.Observer unless the test sets one).
	refreshes hxRefreshes
	// px and upstream are set with hxEnvConfig.Proxy: upstream counts the
	// requests the example server behind the proxy received, by
	// hxRequestID.
	px       *proxy.Proxy
	upstream hxSeen

	closeOnce sync.Once
	cleanups  []func()
	issClose  *hxOwnCleanups // the issuer's cleanup, run by close
}

// hxOwnCleanups is a testing.TB whose Cleanup functions run when run is
// called (by hxEnv.close, itself a t.Cleanup), so that a test can close
// the issuer before it counts goroutines.
type hxOwnCleanups struct {
	testing.TB
	mu  sync.Mutex
	fns []func()
}

func (c *hxOwnCleanups) Cleanup(f func()) {
	c.mu.Lock()
	c.fns = append(c.fns, f)
	c.mu.Unlock()
}

// run calls the registered functions, last first, once. A nil c (an env
// whose issuer was made with the test's own t, as TestIntrospection's)
// has none.
func (c *hxOwnCleanups) run() {
	if c == nil {
		return
	}
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// hxSeen counts requests by their hxRequestID header.
type hxSeen struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *hxSeen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.n == nil {
			s.n = map[string]int{}
		}
		s.n[r.Header.Get(hxRequestID)]++
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *hxSeen) get(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

// newHxEnv starts the issuer, the key source, the validator and the
// example server. Everything is closed by t.Cleanup, or earlier by close.
func newHxEnv(t testing.TB, cfg hxEnvConfig) *hxEnv {
	t.Helper()
	e := &hxEnv{issClose: &hxOwnCleanups{TB: t}}
	e.ts = httptest.NewUnstartedServer(nil)
	e.mcpURL = "http://" + e.ts.Listener.Addr().String() + "/mcp"

	icfg := cfg.Issuer
	icfg.Audience = e.mcpURL
	e.iss = authtest.NewIssuer(e.issClose, icfg)
	t.Cleanup(e.close) // also after a failure below
	if cfg.BeforeStart != nil {
		cfg.BeforeStart(e.iss)
	}

	jc := cfg.JWKS
	jc.Issuer = e.iss.URL
	jc.JWKSURL = e.iss.JWKSURL
	if jc.RefreshInterval == 0 {
		jc.RefreshInterval = time.Hour
	}
	if jc.RefreshRateLimit == 0 {
		jc.RefreshRateLimit = 10 * time.Second
	}
	if jc.WaitTimeout == 0 {
		jc.WaitTimeout = time.Second
	}
	if jc.FetchTimeout == 0 {
		jc.FetchTimeout = 2 * time.Second
	}
	if !cfg.WallClockJWKS {
		jc.Now = e.iss.Now
	}
	if jc.Observer == nil {
		jc.Observer = &e.refreshes
	}
	e.jwksCfg = jc
	keys, err := jwks.New(jc)
	if err != nil {
		e.close()
		t.Fatalf("jwks.New: %v", err)
	}
	e.keys = keys

	vc := cfg.Validate
	vc.Issuers = []validate.Issuer{{Issuer: e.iss.URL, Keys: keys}}
	vc.Audiences = []string{e.mcpURL}
	vc.TenantClaim = "tenant"
	vc.Now = e.iss.Now
	if e.val, err = validate.New(vc); err != nil {
		e.close()
		t.Fatalf("validate.New: %v", err)
	}
	if cfg.Proxy {
		if err := e.startProxy(t); err != nil {
			e.close()
			t.Fatal(err)
		}
	} else {
		e.srv, err = server.New(server.Config{
			Resource:             e.mcpURL,
			AuthorizationServers: []string{e.iss.URL},
			Validator:            e.val,
			Scopes:               []string{hxBaseScope},
			Now:                  e.iss.Now,
		})
		if err != nil {
			e.close()
			t.Fatalf("server.New: %v", err)
		}
		e.metaURL = e.srv.ResourceMetadataURL()
		e.ts.Config.Handler = e.reads.wrap(e.srv)
	}
	e.ts.Start()
	// An own transport, so that closing its idle connections leaves no
	// goroutine behind and no other test shares its pool.
	e.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		Timeout:   20 * time.Second,
	}
	return e
}

// startProxy builds the proxy at e.mcpURL and the example server behind
// it (hxEnvConfig.Proxy), with the example server's policy.
func (e *hxEnv) startProxy(t testing.TB) error {
	upTS := httptest.NewUnstartedServer(nil)
	e.cleanups = append(e.cleanups, upTS.Close)
	upURL := "http://" + upTS.Listener.Addr().String() + "/mcp"
	px, err := proxy.New(proxy.Config{
		Routes: []proxy.Route{{
			Resource: e.mcpURL, Upstream: upURL, Issuers: []string{e.iss.URL}, Scopes: []string{hxBaseScope},
			Operations: proxy.Operations{Tools: map[string][]string{
				server.ToolWhoami: nil, server.ToolNotesList: {server.ScopeNotesRead}, server.ToolNotesWrite: {server.ScopeNotesWrite},
			}},
			Validation: proxy.Validation{TenantClaim: "tenant"},
			// The upstream counts requests by this header (hxSeen); the
			// allow-list drops every header a route does not name.
			ForwardHeaders: []string{hxRequestID},
		}},
		Issuers: map[string]proxy.Issuer{e.iss.URL: {JWKSURL: e.iss.JWKSURL, RefreshInterval: time.Hour}},
		Now:     e.iss.Now,
	})
	if err != nil {
		return fmt.Errorf("proxy.New: %w", err)
	}
	e.px = px
	e.cleanups = append(e.cleanups, func() { _ = px.Close() })
	e.ts.Config.Handler = e.reads.wrap(px)
	e.metaURL, _ = prm.MetadataURL(e.mcpURL)

	// The example server trusts the proxy's assertions only.
	upKeys, err := jwks.New(jwks.Config{Issuer: px.AssertionIssuer(), JWKSURL: strings.TrimSuffix(e.mcpURL, "/mcp") + px.JWKSPath()})
	if err != nil {
		return fmt.Errorf("upstream jwks.New: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { _ = upKeys.Close() })
	upVal, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: px.AssertionIssuer(), Keys: upKeys}},
		Audiences:   []string{upURL},
		TenantClaim: "tenant",
		Now:         e.iss.Now,
	})
	if err != nil {
		return fmt.Errorf("upstream validate.New: %w", err)
	}
	e.srv, err = server.New(server.Config{
		Resource:             upURL,
		AuthorizationServers: []string{px.AssertionIssuer()},
		Validator:            upVal,
		Scopes:               []string{hxBaseScope},
		Now:                  e.iss.Now,
	})
	if err != nil {
		return fmt.Errorf("upstream server.New: %w", err)
	}
	upTS.Config.Handler = e.upstream.wrap(e.srv)
	upTS.Start()
	return nil
}

// close stops the HTTP server, the key source, the proxy and the issuer (its
// cleanup, which releases held requests) and drops the client's idle
// connections. It is idempotent.
func (e *hxEnv) close() {
	e.closeOnce.Do(func() {
		if e.client != nil {
			e.client.CloseIdleConnections()
		}
		if e.ts != nil {
			e.ts.Close()
		}
		if e.keys != nil {
			_ = e.keys.Close()
		}
		for _, f := range e.cleanups {
			f()
		}
		e.issClose.run()
	})
}

// tok mints a token that is valid for the server's notes_write tool: the
// authtest defaults (ES256, typ at+jwt, tenant-a, …) with the scopes
// "mcp:tools notes:write", changed by at most one spec (whose own Scopes
// win).
func (e *hxEnv) tok(t testing.TB, spec ...authtest.Token) string {
	t.Helper()
	tk := hxSpec(t, spec)
	if tk.Scopes == nil {
		tk.Scopes = []string{hxBaseScope, server.ScopeNotesWrite}
	}
	return e.iss.Token(t, tk)
}

// hxSpec returns the only token spec of a helper's optional argument, or
// the zero (valid) one.
func hxSpec(t testing.TB, spec []authtest.Token) authtest.Token {
	t.Helper()
	switch len(spec) {
	case 0:
		return authtest.Token{}
	case 1:
		return spec[0]
	}
	t.Fatalf("%d token specs, want at most 1", len(spec))
	return authtest.Token{}
}

// claims returns the claims of a valid token for notes_write at the
// issuer's current time, for tokens signed with hxSignRaw.
func (e *hxEnv) claims() map[string]any {
	now := e.iss.Now()
	return map[string]any{
		"iss":       e.iss.URL,
		"sub":       "user-1",
		"aud":       e.mcpURL,
		"client_id": "client-1",
		"jti":       hxRandomHex(8),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
		"scope":     hxBaseScope + " " + server.ScopeNotesWrite,
		"tenant":    "tenant-a",
	}
}

// hxCounts is a snapshot of every outbound request the server could make.
type hxCounts struct {
	jwks, metadata, introspection, attacker int64
}

func (e *hxEnv) counts(a *hxAttacker) hxCounts {
	c := hxCounts{
		jwks:          e.iss.Requests(e.iss.JWKSURL),
		metadata:      e.iss.Requests(e.iss.MetadataURLs...),
		introspection: e.iss.Requests(e.iss.IntrospectionURL),
	}
	if a != nil {
		c.attacker = a.requests.Load()
	}
	return c
}

// hxBodyReads wraps the server handler and counts, per request, the bytes
// the handler chain read from the request body. A refused request must
// read nothing: the middleware reads the body only after the token is
// valid, so a non-zero count on a 400/401 would mean the middleware went
// on with an invalid token.
type hxBodyReads struct {
	mu sync.Mutex
	n  map[string]*atomic.Int64
}

func (b *hxBodyReads) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(hxRequestID)
		c := new(atomic.Int64)
		b.mu.Lock()
		if b.n == nil {
			b.n = map[string]*atomic.Int64{}
		}
		b.n[id] = c
		b.mu.Unlock()
		if r.Body != nil {
			r.Body = &hxCountingBody{ReadCloser: r.Body, n: c}
		}
		h.ServeHTTP(w, r)
	})
}

func (b *hxBodyReads) get(id string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.n[id]; c != nil {
		return c.Load()
	}
	return -1 // the request never reached the server
}

type hxCountingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *hxCountingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// hxSettleGoroutines waits, boundedly, for the goroutine count to come back
// to at most baseline+tolerance, and fails with a stack dump if it does not.
func hxSettleGoroutines(t testing.TB, baseline, tolerance int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	n := runtime.NumGoroutine()
	for n > baseline+tolerance && time.Now().Before(deadline) {
		time.Sleep(hxPoll)
		n = runtime.NumGoroutine()
	}
	if n > baseline+tolerance {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines = %d after teardown, want <= %d (baseline %d + %d)\n%s", n, baseline+tolerance, baseline, tolerance, buf)
	}
}

// hxWaitFor polls cond every hxPoll until it is true or d has passed, and
// reports whether it became true.
func hxWaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(hxPoll)
	}
}

// hxContext returns a context for one test, bounded so that a hung server
// fails the test instead of the suite.
func hxContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
