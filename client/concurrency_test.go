package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// TestConcurrentStepUp runs many RoundTrips that need the same new scope
// (one authorization expected: they coalesce) or one of two new scopes
// (two authorizations), with GrantedScopes read concurrently. Run with
// -race.
func TestConcurrentStepUp(t *testing.T) {
	tests := []struct {
		name      string
		needs     []string // the "need" query of each RoundTrip, cycled
		wantCalls int
		wantHave  []string
	}{
		{"same scope coalesces", []string{"a+b"}, 1, []string{"a", "b"}},
		{"two scopes", []string{"a+b", "a+c"}, 2, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			a := &fakeAuthz{}
			tr, err := New(Config{Resource: f.resource, TokenSource: staticToken("a"), GrantedScopes: []string{"a"}, Authorizer: a})
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: tr}
			const n = 32
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(2)
				go func() {
					defer wg.Done()
					resp, err := hc.Get(f.resource + "?need=" + tt.needs[i%len(tt.needs)])
					if err != nil {
						errs <- err
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						errs <- errors.New(resp.Status)
					}
				}()
				go func() {
					defer wg.Done()
					_ = tr.grantedScopes()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := len(a.scopes()); got != tt.wantCalls {
				t.Errorf("Authorize calls = %d (%q), want %d", got, a.scopes(), tt.wantCalls)
			}
			got := tr.grantedScopes()
			slices.Sort(got)
			if !slices.Equal(got, tt.wantHave) {
				t.Errorf("grantedScopes() = %q, want %q", got, tt.wantHave)
			}
		})
	}
}

// TestWaitForAuthorizationHonoursContext: a RoundTrip challenged while
// another one authorizes waits, and gives up when its context ends.
func TestWaitForAuthorizationHonoursContext(t *testing.T) {
	f := newFake(t)
	a := &fakeAuthz{wait: make(chan struct{})}
	tr, err := New(Config{Resource: f.resource, Authorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Get(f.resource)
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	// The first RoundTrip is inside Authorize (bounded wait).
	for deadline := time.Now().Add(30 * time.Second); len(a.scopes()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first RoundTrip never reached Authorize")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.resource, nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting RoundTrip error = %v, want context.DeadlineExceeded", err)
	}
	close(a.wait)
	if err := <-first; err != nil {
		t.Errorf("first RoundTrip: %v", err)
	}
	if got := len(a.scopes()); got != 1 {
		t.Errorf("Authorize calls = %d, want 1", got)
	}
}

// TestMetadataCache: metadata is fetched once per TTL (pinned clock).
func TestMetadataCache(t *testing.T) {
	f := newFake(t)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := &fakeAuthz{}
	tr, err := New(Config{Resource: f.resource, TokenSource: staticToken(), Authorizer: a, Now: clock, MetadataTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	get := func(need string) {
		t.Helper()
		resp, err := (&http.Client{Transport: tr}).Get(f.resource + "?need=" + need)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d", resp.StatusCode)
		}
	}
	get("a")
	get("b")
	if _, hits := f.counts(); hits != 1 {
		t.Errorf("metadata fetches = %d, want 1", hits)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	get("c")
	if _, hits := f.counts(); hits != 2 {
		t.Errorf("metadata fetches after TTL = %d, want 2", hits)
	}
	if got, want := a.scopes(), [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Authorize scopes = %q, want %q", got, want)
	}
}

// TestAuthorizerPanicReleasesLeadership: a panicking Authorizer must not
// leave later RoundTrips waiting forever.
func TestAuthorizerPanicReleasesLeadership(t *testing.T) {
	f := newFake(t)
	var calls atomic.Int32
	authz := AuthorizerFunc(func(context.Context, AuthorizeRequest) (oauth2.TokenSource, error) {
		if calls.Add(1) == 1 {
			panic("authorizer bug")
		}
		return staticToken("files:read"), nil
	})
	tr, err := New(Config{Resource: f.resource, Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic was swallowed")
			}
		}()
		req, _ := http.NewRequest(http.MethodGet, f.resource, nil)
		_, _ = tr.RoundTrip(req)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.resource, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip after panic: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status = %d, want 200", resp.StatusCode)
	}
}

// TestAuthorizerResults: unusable Authorizer results fail with
// errAuthorize and leave the old token in place.
func TestAuthorizerResults(t *testing.T) {
	tests := []struct {
		name string
		ts   oauth2.TokenSource
		err  error
	}{
		{"nil token source", nil, nil},
		{"token source fails", errSource{errors.New("exchange failed")}, nil},
		{"empty access token", oauth2.StaticTokenSource(&oauth2.Token{}), nil},
		{"authorizer error", nil, errors.New("declined")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			authz := AuthorizerFunc(func(context.Context, AuthorizeRequest) (oauth2.TokenSource, error) { return tt.ts, tt.err })
			tr, err := New(Config{Resource: f.resource, TokenSource: staticToken("a"), GrantedScopes: []string{"a"}, Authorizer: authz})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, f.resource+"?need=b", nil)
			if _, err := tr.RoundTrip(req); !errors.Is(err, errAuthorize) {
				t.Fatalf("error = %v, want errAuthorize", err)
			}
			if got := tr.grantedScopes(); !slices.Equal(got, []string{"a"}) {
				t.Errorf("grantedScopes() = %q, want [a]", got)
			}
		})
	}
}
