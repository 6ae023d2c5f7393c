package introspect_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

func newHybrid(t *testing.T, iss *authtest.Issuer, in *introspect.Introspector) *introspect.Hybrid {
	t.Helper()
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:   []string{iss.Audience},
		TenantClaim: "tenant",
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := introspect.NewHybrid(v, in)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHybrid: JWTs of the trusted issuer are validated locally only, even
// when the (lax) introspection endpoint would call them active; every
// other token is introspected.
func TestHybrid(t *testing.T) {
	tests := []struct {
		name      string
		mint      func(t *testing.T, iss *authtest.Issuer) string
		wantErr   error
		wantCalls int64
	}{
		{name: "jwt", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.Token{}) }},
		{name: "jwt, forged signature", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.Token{ForeignKey: true}) }, wantErr: validate.Error{Reason: "signature"}},
		{name: "jwt, unknown kid", mint: func(t *testing.T, iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{ForeignKey: true, KID: "unknown-kid"})
		}, wantErr: validate.Error{Reason: "unknown_key"}},
		{name: "jwt, expired", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.Expired()) }, wantErr: validate.Error{Reason: "expired"}},
		{name: "jwt, wrong audience", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.WrongAudience()) }, wantErr: validate.Error{Reason: "audience"}},
		{name: "jwt, unsigned", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.AlgNone()) }, wantErr: validate.Error{Reason: "algorithm"}},
		{name: "jwt, HS256", mint: func(t *testing.T, iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Alg: jose.HS256})
		}, wantErr: validate.Error{Reason: "algorithm"}},
		{name: "jwt of another issuer", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.WrongIssuer()) }, wantErr: validate.Error{Reason: "issuer"}, wantCalls: 1},
		{name: "opaque", mint: func(t *testing.T, iss *authtest.Issuer) string { return iss.Token(t, authtest.Token{Opaque: true}) }, wantCalls: 1},
		{name: "opaque, expired", mint: func(t *testing.T, iss *authtest.Issuer) string {
			return iss.Token(t, authtest.Token{Opaque: true, Age: 2 * time.Hour})
		}, wantErr: validate.Error{Reason: "expired"}, wantCalls: 1},
		{name: "unknown opaque", mint: func(*testing.T, *authtest.Issuer) string { return "never-issued" }, wantErr: validate.Error{Reason: "missing_claim"}, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, in := asIntro(t, nil)
			iss.SetFault("always-active", iss.IntrospectionURL)
			h := newHybrid(t, iss, in)
			_, err := h.Validate(t.Context(), tt.mint(t, iss))
			checkErr(t, err, tt.wantErr)
			if got := iss.Requests(iss.IntrospectionURL); got != tt.wantCalls {
				t.Errorf("introspection calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestNewHybridConfig(t *testing.T) {
	iss, in := asIntro(t, nil)
	if _, err := introspect.NewHybrid(nil, in); !errors.Is(err, introspect.ErrConfig) {
		t.Errorf("NewHybrid(nil, in) = %v, want %v", err, introspect.ErrConfig)
	}
	h := newHybrid(t, iss, in)
	if _, err := introspect.NewHybrid(nil, nil); !errors.Is(err, introspect.ErrConfig) || h == nil {
		t.Errorf("NewHybrid(nil, nil) = %v", err)
	}
}
