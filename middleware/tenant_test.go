package middleware

import (
	"context"
	"errors"
	"testing"
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
		{name: "other tenant", ctx: withTenant("t1"), arg: "t2", wantTenant: "t1", wantErr: ErrTenantMismatch},
		{name: "case differs", ctx: withTenant("t1"), arg: "T1", wantTenant: "t1", wantErr: ErrTenantMismatch},
		{name: "token without tenant", ctx: withTenant(""), arg: "t1", wantGetErr: ErrNoTenant, wantErr: ErrNoTenant},
		{name: "token without tenant, no argument", ctx: withTenant(""), arg: "", wantGetErr: ErrNoTenant},
		{name: "no principal", ctx: context.Background(), arg: "t1", wantGetErr: ErrNoPrincipal, wantErr: ErrNoPrincipal},
		{name: "nil principal", ctx: ContextWithPrincipal(context.Background(), nil), arg: "", wantGetErr: ErrNoPrincipal, wantErr: ErrNoPrincipal},
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

func TestPrincipalHasScope(t *testing.T) {
	p := &Principal{Scopes: []string{"a", "b:c"}}
	for s, want := range map[string]bool{"a": true, "b:c": true, "A": false, "b": false, "": false} {
		if got := p.HasScope(s); got != want {
			t.Errorf("HasScope(%q) = %t, want %t", s, got, want)
		}
	}
	var nilP *Principal
	if nilP.HasScope("a") {
		t.Error("nil principal has a scope")
	}
}
