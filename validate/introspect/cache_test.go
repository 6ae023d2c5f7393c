package introspect_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// asIntro returns an authtest issuer and an Introspector for it that
// shares the issuer's pinned clock and uses its Basic credentials.
func asIntro(t *testing.T, mut func(*introspect.Config)) (*authtest.Issuer, *introspect.Introspector) {
	t.Helper()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	id, secret := iss.IntrospectionClientID, iss.IntrospectionSecret
	cfg := introspect.Config{
		Issuer: iss.URL, Endpoint: iss.IntrospectionURL, Audiences: []string{iss.Audience},
		ClientID: id, ClientSecret: secret, Now: iss.Now, TenantClaim: "tenant",
	}
	if mut != nil {
		mut(&cfg)
	}
	return iss, newIntro(t, cfg)
}

// step is one Validate call in a cache scenario.
type step struct {
	advance   time.Duration // clock advance before the call
	mode      *authtest.Fault
	token     int // index into the scenario's tokens
	wantErr   error
	wantCalls int64 // total introspection calls after the step
}

func mode(m authtest.Fault) *authtest.Fault { return &m }

func TestCache(t *testing.T) {
	tests := []struct {
		name   string
		mut    func(*introspect.Config)
		tokens []authtest.Token // one opaque token per spec (nil: one valid token)
		steps  []step
	}{
		{
			name: "hit until MaxCacheTTL",
			mut:  func(c *introspect.Config) { c.MaxCacheTTL = 5 * time.Minute },
			steps: []step{
				{wantCalls: 1},
				{wantCalls: 1},
				{advance: 5*time.Minute - time.Second, wantCalls: 1},
				{advance: time.Second, wantCalls: 2},
				{wantCalls: 2},
			},
		},
		{
			name:   "entry expires at exp, then the endpoint says inactive",
			mut:    func(c *introspect.Config) { c.MaxCacheTTL = 5 * time.Minute },
			tokens: []authtest.Token{{Claims: map[string]any{"exp": time.Date(2026, 1, 2, 3, 6, 5, 0, time.UTC).Unix()}}}, // now+2m
			steps: []step{
				{wantCalls: 1},
				{advance: 2*time.Minute - time.Second, wantCalls: 1},
				{advance: time.Second, wantErr: validate.Error{Reason: "inactive"}, wantCalls: 2},
			},
		},
		{
			name: "revocation seen after MaxCacheTTL only",
			mut:  func(c *introspect.Config) { c.MaxCacheTTL = time.Minute },
			steps: []step{
				{wantCalls: 1},
				{mode: mode("inactive"), advance: 30 * time.Second, wantCalls: 1},
				{advance: 30 * time.Second, wantErr: validate.Error{Reason: "inactive"}, wantCalls: 2},
			},
		},
		{
			// The default bounds how long a revoked token is still
			// accepted: 60 s (it was 5 minutes).
			name: "revocation seen after the default 60 s",
			steps: []step{
				{wantCalls: 1},
				{mode: mode("inactive"), advance: time.Minute - time.Second, wantCalls: 1},
				{advance: time.Second, wantErr: validate.Error{Reason: "inactive"}, wantCalls: 2},
			},
		},
		{
			name: "inactive not cached by default",
			steps: []step{
				{mode: mode("inactive"), wantErr: validate.Error{Reason: "inactive"}, wantCalls: 1},
				{wantErr: validate.Error{Reason: "inactive"}, wantCalls: 2},
				{mode: mode(""), wantCalls: 3},
			},
		},
		{
			name: "inactive cached for InactiveCacheTTL",
			mut:  func(c *introspect.Config) { c.InactiveCacheTTL = time.Minute },
			steps: []step{
				{mode: mode("inactive"), wantErr: validate.Error{Reason: "inactive"}, wantCalls: 1},
				{mode: mode(""), advance: time.Minute - time.Second, wantErr: validate.Error{Reason: "inactive"}, wantCalls: 1},
				{advance: time.Second, wantCalls: 2},
			},
		},
		{
			name: "errors not cached",
			steps: []step{
				{mode: mode("server-error"), wantErr: validate.ErrKeysUnavailable, wantCalls: 1},
				{wantErr: validate.ErrKeysUnavailable, wantCalls: 2},
				{mode: mode(""), wantCalls: 3},
				{wantCalls: 3},
			},
		},
		{
			name:   "rejected response not cached",
			tokens: []authtest.Token{authtest.WrongAudience()},
			steps: []step{
				{wantErr: validate.Error{Reason: "audience"}, wantCalls: 1},
				{wantErr: validate.Error{Reason: "audience"}, wantCalls: 2},
			},
		},
		{
			name: "cache disabled",
			mut:  func(c *introspect.Config) { c.CacheSize = -1 },
			steps: []step{
				{wantCalls: 1},
				{wantCalls: 2},
			},
		},
		{
			name:   "least recently used evicted",
			mut:    func(c *introspect.Config) { c.CacheSize = 2 },
			tokens: []authtest.Token{{}, {}, {}},
			steps: []step{
				{token: 0, wantCalls: 1},
				{token: 1, wantCalls: 2},
				{token: 0, wantCalls: 2},
				{token: 2, wantCalls: 3}, // evicts 1
				{token: 0, wantCalls: 3},
				{token: 1, wantCalls: 4},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, in := asIntro(t, tt.mut)
			specs := tt.tokens
			if specs == nil {
				specs = []authtest.Token{{}}
			}
			toks := make([]string, len(specs))
			for i, spec := range specs {
				spec.Opaque = true
				toks[i] = iss.Token(t, spec)
			}
			for n, s := range tt.steps {
				iss.Advance(s.advance)
				if s.mode != nil {
					iss.SetFault(*s.mode, iss.IntrospectionURL)
				}
				_, err := in.Validate(t.Context(), toks[s.token])
				if !errors.Is(err, s.wantErr) || (err == nil) != (s.wantErr == nil) {
					t.Fatalf("step %d: err = %v, want %v", n, err, s.wantErr)
				}
				if got := iss.Requests(iss.IntrospectionURL); got != s.wantCalls {
					t.Fatalf("step %d: introspection calls = %d, want %d", n, got, s.wantCalls)
				}
			}
		})
	}
}

// TestCacheHitIsolated: callers may change the claims they get.
func TestCacheHitIsolated(t *testing.T) {
	iss, in := asIntro(t, nil)
	tok := iss.Token(t, authtest.Token{Opaque: true, Scopes: []string{"a", "b"}})
	c1, err := in.Validate(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	c1.Scopes[0], c1.Subject = "changed", "changed"
	c2, err := in.Validate(t.Context(), tok)
	if err != nil || c2.Scopes[0] != "a" || c2.Subject != "user-1" || iss.Requests(iss.IntrospectionURL) != 1 {
		t.Fatalf("cached claims = %+v, %v (calls %d)", c2, err, iss.Requests(iss.IntrospectionURL))
	}
	var m map[string]any
	if err := c2.Decode(&m); err != nil || m["active"] != true {
		t.Errorf("Decode on a hit = %v %v", m, err)
	}
}

// gate is an http.RoundTripper that holds every request until open is
// closed, counting them.
type gate struct {
	next    http.RoundTripper
	waiting atomic.Int64
	open    chan struct{}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.waiting.Add(1)
	<-g.open
	return g.next.RoundTrip(r)
}

// TestSingleFlight: N concurrent validations of one token make one call,
// with the cache disabled so that only single-flight can explain it. A
// caller who gives up does not fail the others.
func TestSingleFlight(t *testing.T) {
	const n = 32
	g := &gate{next: http.DefaultTransport, open: make(chan struct{})}
	iss, in := asIntro(t, func(c *introspect.Config) {
		c.CacheSize = -1
		c.HTTPClient = &http.Client{Transport: g}
	})
	tok := iss.Token(t, authtest.Token{Opaque: true})

	impatient, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make([]error, n)
	subs := make([]string, n)
	call := func(ctx context.Context, i int) {
		c, err := in.Validate(ctx, tok)
		errs[i] = err
		if c != nil {
			subs[i] = c.Subject
		}
	}
	// The impatient caller starts the flight (its request is held at the
	// gate), every other caller joins it, then the impatient one gives up
	// and has returned before the answer is let through: each step is
	// waited for, none slept.
	impatientDone := make(chan struct{})
	go func() {
		defer close(impatientDone)
		call(impatient, 0)
	}()
	waitCount(t, "the impatient caller's request at the gate", g.waiting.Load, 1)
	for i := 1; i < n; i++ {
		wg.Go(func() { call(t.Context(), i) })
	}
	waitCount(t, "every caller waiting on the flight", func() int64 { return introspect.FlightWaiters(in) }, n)
	cancel()
	<-impatientDone
	close(g.open)
	wg.Wait()

	if got := iss.Requests(iss.IntrospectionURL); got != 1 {
		t.Errorf("introspection calls = %d, want 1", got)
	}
	if !errors.Is(errs[0], context.Canceled) || !errors.Is(errs[0], validate.ErrKeysUnavailable) {
		t.Errorf("impatient caller: err = %v, want context.Canceled and ErrKeysUnavailable", errs[0])
	}
	for i := 1; i < n; i++ {
		if errs[i] != nil || subs[i] != "user-1" {
			t.Errorf("caller %d: %q, %v", i, subs[i], errs[i])
		}
	}
}

// TestAuthtestFaults: every fault of the authorization server is a 503
// (ErrKeysUnavailable), except 200 answers with a JSON media type whose
// body is not an introspection response (ErrMalformed).
func TestAuthtestFaults(t *testing.T) {
	faults := []authtest.Fault{"unavailable", "too-many-requests", "server-error", "hang", "garbage", "empty",
		"empty-key-set", "huge", "refuse", "not-found", "wrong-content-type"} // every authtest.Fault but the introspection modes
	for _, f := range faults {
		t.Run(string(f), func(t *testing.T) {
			// The client has no timeout of its own and refuses a request
			// without a deadline at most the Timeout ahead: "hang" is held
			// until the client gives up, so only the Timeout's deadline
			// ends it, which the error tells (no bound on real time, which
			// a loaded machine stretches). The other faults end by
			// themselves: a long Timeout, so that a loaded machine's slow
			// answer is still classified by its content.
			timeout := 10 * time.Second
			if f == "hang" {
				timeout = 200 * time.Millisecond
			}
			iss, in := asIntro(t, func(c *introspect.Config) { c.Timeout, c.HTTPClient = timeout, deadlineClient(timeout) })
			iss.SetFault(f, iss.IntrospectionURL)
			_, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true}))
			want := validate.ErrKeysUnavailable
			switch f {
			case "garbage", "empty", "empty-key-set":
				want = validate.Error{Reason: "malformed"}
			}
			checkErr(t, err, want)
			if errors.Is(err, errNoDeadline) || (f == "hang" && !errors.Is(err, context.DeadlineExceeded)) {
				t.Errorf("err = %v; want the Timeout's deadline to end it", err)
			}
		})
	}
}

func TestWrongCredentials(t *testing.T) {
	var logs logBuffer
	iss, in := asIntro(t, func(c *introspect.Config) { c.ClientSecret, c.Logger = "wrong", logs.logger() })
	_, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true}))
	checkErr(t, err, validate.ErrKeysUnavailable)
	if !errors.Is(err, introspect.ErrClientAuth) {
		t.Errorf("err = %v, want %v", err, introspect.ErrClientAuth)
	}
	if got := logs.String(); !containsAll(got, "level=ERROR", "status=401", "client_id=rs-client", "auth_method=client_secret_basic") {
		t.Errorf("log lacks a loud client-authentication error:\n%s", got)
	}
}

func TestDiscovery(t *testing.T) {
	var logs logBuffer
	iss, in := asIntro(t, func(c *introspect.Config) { c.Endpoint, c.Logger = "", logs.logger() })
	if _, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true})); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true})); err != nil {
		t.Fatal(err)
	}
	if m, c := iss.Requests(iss.MetadataURLs...), iss.Requests(iss.IntrospectionURL); m != 1 || c != 2 {
		t.Errorf("metadata fetches %d, introspection calls %d; want 1 and 2", m, c)
	}
	if !containsAll(logs.String(), "level=INFO", "discovered introspection_endpoint", iss.IntrospectionURL) {
		t.Errorf("log:\n%s", logs.String())
	}
}

func TestDiscoveryFailure(t *testing.T) {
	iss, in := asIntro(t, func(c *introspect.Config) { c.Endpoint = "" })
	iss.SetFault("unavailable", iss.MetadataURLs...)
	tok := iss.Token(t, authtest.Token{Opaque: true})
	_, err := in.Validate(t.Context(), tok)
	checkErr(t, err, validate.ErrKeysUnavailable)
	first := iss.Requests(iss.MetadataURLs...)
	if first == 0 {
		t.Fatalf("no metadata fetched")
	}
	// Within the backoff: no new attempt.
	iss.SetFault("", iss.MetadataURLs...)
	iss.Advance(4 * time.Second)
	_, err = in.Validate(t.Context(), tok)
	checkErr(t, err, validate.ErrKeysUnavailable)
	if got := iss.Requests(iss.MetadataURLs...); got != first {
		t.Errorf("metadata fetches = %d within the backoff, want %d", got, first)
	}
	iss.Advance(time.Second)
	if _, err := in.Validate(t.Context(), tok); err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
}

func TestDiscoveryNoEndpoint(t *testing.T) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{ExtraMetadata: map[string]any{"introspection_endpoint": nil}})
	in := newIntro(t, introspect.Config{Issuer: iss.URL, Audiences: []string{iss.Audience}, Now: iss.Now})
	_, err := in.Validate(t.Context(), iss.Token(t, authtest.Token{Opaque: true}))
	checkErr(t, err, validate.ErrKeysUnavailable)
	if iss.Requests(iss.IntrospectionURL) != 0 {
		t.Errorf("introspection called without a discovered endpoint")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// waitCount waits until get returns want, for at most 30 s.
func waitCount(t *testing.T, what string, get func() int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); get() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, get(), want)
		}
	}
}
