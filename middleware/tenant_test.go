package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestTenant(t *testing.T) {
	withTenant := func(tenant string) context.Context {
		return ContextWithPrincipal(context.Background(), &Principal{Subject: "u", Tenant: tenant})
	}
	tests := []struct {
		name       string
		ctx        context.Context
		arg        string
		wantTenant string
		wantGetErr error
		wantErr    error
	}{
		{name: "same", ctx: withTenant("t1"), arg: "t1", wantTenant: "t1"},
		{name: "no argument", ctx: withTenant("t1"), arg: "", wantTenant: "t1"},
		{name: "other tenant", ctx: withTenant("t1"), arg: "t2", wantTenant: "t1", wantErr: errTenantMismatch},
		{name: "case differs", ctx: withTenant("t1"), arg: "T1", wantTenant: "t1", wantErr: errTenantMismatch},
		{name: "token without tenant", ctx: withTenant(""), arg: "t1", wantGetErr: errNoTenant, wantErr: errNoTenant},
		{name: "token without tenant, no argument", ctx: withTenant(""), arg: "", wantGetErr: errNoTenant},
		{name: "no principal", ctx: context.Background(), arg: "t1", wantGetErr: errNoPrincipal, wantErr: errNoPrincipal},
		{name: "nil principal", ctx: ContextWithPrincipal(context.Background(), nil), arg: "", wantGetErr: errNoPrincipal, wantErr: errNoPrincipal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TenantFromContext(tt.ctx)
			if got != tt.wantTenant || !errors.Is(err, tt.wantGetErr) || (err == nil) != (tt.wantGetErr == nil) {
				t.Errorf("TenantFromContext() = %q, %v; want %q, %v", got, err, tt.wantTenant, tt.wantGetErr)
			}
			if err := CheckTenant(tt.ctx, tt.arg); !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("CheckTenant() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestPrincipalContext: the context Handler and Protect give the next
// handler carries the principal and everything of the request's own
// context: its values, its deadline and its cancellation.
func TestPrincipalContext(t *testing.T) {
	f := newFixture(t, nil)
	type key struct{}
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
		req  func(tok string) *http.Request
	}{
		{"Handler", f.m.Handler, func(tok string) *http.Request { return rpcRequest(modernRev, "tools/list", "", tok) }},
		{"Protect", f.m.Protect(), func(tok string) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "https://mcp.example.com/hooks", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(t.Context(), key{}, "v"))
			deadline := time.Now().Add(time.Hour)
			parent, cancelDeadline := context.WithDeadline(parent, deadline)
			defer cancelDeadline()
			var got context.Context
			h := tc.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Context() }))
			h.ServeHTTP(httptest.NewRecorder(), tc.req(f.token(t, "mcp", "tools:read")).WithContext(parent))
			if got == nil {
				t.Fatal("next was not called")
			}
			p, ok := PrincipalFromContext(got)
			if !ok || p.Subject != "user-1" {
				t.Fatalf("principal %+v, %t", p, ok)
			}
			if got.Value(key{}) != "v" {
				t.Error("a value of the request's context is lost")
			}
			if d, ok := got.Deadline(); !ok || !d.Equal(deadline) {
				t.Errorf("deadline %v %t, want %v", d, ok, deadline)
			}
			cause := errors.New("client went away")
			cancel(cause)
			select {
			case <-got.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("cancelling the request's context did not reach next")
			}
			if !errors.Is(context.Cause(got), cause) || !errors.Is(got.Err(), context.Canceled) {
				t.Errorf("cause %v, err %v", context.Cause(got), got.Err())
			}
			// A copy of the principal put in another context is found
			// there, not the original.
			q := *p
			q.Subject = "copy"
			if c, _ := PrincipalFromContext(ContextWithPrincipal(got, &q)); c.Subject != "copy" {
				t.Errorf("principal of a derived context: %q", c.Subject)
			}
		})
	}
}

// sliceCtx is a context of a non-comparable type, passed by value.
type sliceCtx struct {
	context.Context
	tags []string
}

// TestPrincipalContextNotComparable: a request context whose type cannot
// be compared with == (a struct value holding a slice) goes through
// Handler: the middleware never compares contexts.
func TestPrincipalContextNotComparable(t *testing.T) {
	f := newFixture(t, nil)
	var got *Principal
	h := f.m.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got, _ = PrincipalFromContext(r.Context()) }))
	r := rpcRequest(modernRev, "tools/list", "", f.token(t, "mcp", "tools:read"))
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(sliceCtx{Context: r.Context(), tags: []string{"a"}}))
	if got == nil || got.Subject != "user-1" {
		t.Fatalf("principal %+v", got)
	}
}
