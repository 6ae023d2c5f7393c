package asmeta

import (
	"errors"
	"testing"
)

func TestMetadataValidate(t *testing.T) {
	const iss = "https://as.example/t1"
	valid := func() Metadata {
		return Metadata{
			Issuer:                 iss,
			AuthorizationEndpoint:  "https://as.example/t1/authorize",
			TokenEndpoint:          "https://as.example/t1/token",
			JWKSURI:                "https://as.example/t1/jwks",
			ResponseTypesSupported: []string{"code"},
		}
	}
	tests := []struct {
		name    string
		issuer  string // "" => iss
		edit    func(m *Metadata)
		wantErr error
	}{
		{name: "valid", edit: func(*Metadata) {}},
		{name: "issuer trailing slash differs", edit: func(m *Metadata) { m.Issuer = iss + "/" }, wantErr: ErrIssuerMismatch},
		{name: "issuer case differs", edit: func(m *Metadata) { m.Issuer = "https://AS.example/t1" }, wantErr: ErrIssuerMismatch},
		{name: "issuer missing", edit: func(m *Metadata) { m.Issuer = "" }, wantErr: ErrIssuerMismatch},
		{name: "expected issuer invalid", issuer: "http://as.example/t1", edit: func(m *Metadata) { m.Issuer = "http://as.example/t1" }, wantErr: ErrInvalidIssuer},
		{name: "response types missing", edit: func(m *Metadata) { m.ResponseTypesSupported = nil }, wantErr: ErrInvalidMetadata},
		{name: "authorization endpoint missing (default grants)", edit: func(m *Metadata) { m.AuthorizationEndpoint = "" }, wantErr: ErrInvalidMetadata},
		{name: "authorization endpoint not needed for client_credentials", edit: func(m *Metadata) {
			m.AuthorizationEndpoint = ""
			m.GrantTypesSupported = []string{"client_credentials"}
		}},
		{name: "token endpoint missing", edit: func(m *Metadata) { m.TokenEndpoint = "" }, wantErr: ErrInvalidMetadata},
		{name: "token endpoint not needed for implicit only", edit: func(m *Metadata) {
			m.TokenEndpoint = ""
			m.GrantTypesSupported = []string{"implicit"}
		}},
		{name: "jwks_uri http", edit: func(m *Metadata) { m.JWKSURI = "http://as.example/jwks" }, wantErr: ErrInvalidMetadata},
		{name: "jwks_uri http loopback under https issuer", edit: func(m *Metadata) { m.JWKSURI = "http://127.0.0.1/jwks" }, wantErr: ErrInvalidMetadata},
		{name: "jwks_uri relative", edit: func(m *Metadata) { m.JWKSURI = "/jwks" }, wantErr: ErrInvalidMetadata},
		{name: "token endpoint fragment", edit: func(m *Metadata) { m.TokenEndpoint += "#x" }, wantErr: ErrInvalidMetadata},
		{name: "authorization endpoint query allowed", edit: func(m *Metadata) { m.AuthorizationEndpoint += "?tenant=1" }},
		{name: "registration endpoint userinfo", edit: func(m *Metadata) { m.RegistrationEndpoint = "https://u@as.example/reg" }, wantErr: ErrInvalidMetadata},
		{name: "introspection endpoint http", edit: func(m *Metadata) { m.IntrospectionEndpoint = "http://as.example/i" }, wantErr: ErrInvalidMetadata},
		{name: "revocation endpoint http", edit: func(m *Metadata) { m.RevocationEndpoint = "http://as.example/r" }, wantErr: ErrInvalidMetadata},
		{name: "userinfo endpoint http", edit: func(m *Metadata) { m.UserinfoEndpoint = "http://as.example/u" }, wantErr: ErrInvalidMetadata},
		{name: "loopback http issuer allows loopback http endpoints", issuer: "http://127.0.0.1:9/t", edit: func(m *Metadata) {
			m.Issuer = "http://127.0.0.1:9/t"
			m.AuthorizationEndpoint = "http://127.0.0.1:9/t/authorize"
			m.TokenEndpoint = "http://localhost:9/t/token"
			m.JWKSURI = "http://[::1]:9/t/jwks"
		}},
		{name: "loopback http issuer still refuses remote http", issuer: "http://127.0.0.1:9/t", edit: func(m *Metadata) {
			m.Issuer = "http://127.0.0.1:9/t"
			m.JWKSURI = "http://as.example/jwks"
		}, wantErr: ErrInvalidMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.edit(&m)
			issuer := tt.issuer
			if issuer == "" {
				issuer = iss
			}
			if err := m.Validate(issuer); !errors.Is(err, tt.wantErr) {
				t.Errorf("Validate(%q) = %v, want %v", issuer, err, tt.wantErr)
			}
		})
	}
}

func TestMismatchErrorQuotesIssuer(t *testing.T) {
	m := Metadata{Issuer: "https://evil.example/\n" + string(make([]byte, 500))}
	err := m.Validate("https://as.example")
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("Validate = %v, want %v", err, ErrIssuerMismatch)
	}
	if s := err.Error(); len(s) > 700 {
		t.Errorf("error text is %d bytes, want it truncated", len(s))
	}
	for _, r := range err.Error() {
		if r == '\n' || r == 0 {
			t.Fatalf("error text contains a raw control character: %q", err.Error())
		}
	}
}
