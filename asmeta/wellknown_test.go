package asmeta

import (
	"errors"
	"slices"
	"testing"
)

func TestWellKnownURLs(t *testing.T) {
	tests := []struct {
		name    string
		issuer  string
		want    []string
		wantErr error
	}{
		{
			name:   "path (spec §2.1 example)",
			issuer: "https://auth.example.com/tenant1",
			want: []string{
				"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
				"https://auth.example.com/.well-known/openid-configuration/tenant1",
				"https://auth.example.com/tenant1/.well-known/openid-configuration",
			},
		},
		{
			name:   "no path",
			issuer: "https://auth.example.com",
			want: []string{
				"https://auth.example.com/.well-known/oauth-authorization-server",
				"https://auth.example.com/.well-known/openid-configuration",
			},
		},
		{
			name:   "root slash is removed (RFC 8414 §3.1)",
			issuer: "https://auth.example.com/",
			want: []string{
				"https://auth.example.com/.well-known/oauth-authorization-server",
				"https://auth.example.com/.well-known/openid-configuration",
			},
		},
		{
			name:   "terminating slash after path is removed",
			issuer: "https://auth.example.com/tenant1/",
			want: []string{
				"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
				"https://auth.example.com/.well-known/openid-configuration/tenant1",
				"https://auth.example.com/tenant1/.well-known/openid-configuration",
			},
		},
		{
			name:   "multi-segment path and port",
			issuer: "https://login.example:8443/realms/dev",
			want: []string{
				"https://login.example:8443/.well-known/oauth-authorization-server/realms/dev",
				"https://login.example:8443/.well-known/openid-configuration/realms/dev",
				"https://login.example:8443/realms/dev/.well-known/openid-configuration",
			},
		},
		{
			name:   "percent-encoding kept",
			issuer: "https://a.example/t%2F1",
			want: []string{
				"https://a.example/.well-known/oauth-authorization-server/t%2F1",
				"https://a.example/.well-known/openid-configuration/t%2F1",
				"https://a.example/t%2F1/.well-known/openid-configuration",
			},
		},
		{
			name:   "http loopback",
			issuer: "http://127.0.0.1:8080",
			want: []string{
				"http://127.0.0.1:8080/.well-known/oauth-authorization-server",
				"http://127.0.0.1:8080/.well-known/openid-configuration",
			},
		},
		{
			name:   "http localhost",
			issuer: "http://localhost:9000/as",
			want: []string{
				"http://localhost:9000/.well-known/oauth-authorization-server/as",
				"http://localhost:9000/.well-known/openid-configuration/as",
				"http://localhost:9000/as/.well-known/openid-configuration",
			},
		},
		{
			name:   "http ipv6 loopback",
			issuer: "http://[::1]:8080",
			want: []string{
				"http://[::1]:8080/.well-known/oauth-authorization-server",
				"http://[::1]:8080/.well-known/openid-configuration",
			},
		},
		{name: "http remote", issuer: "http://auth.example.com", wantErr: ErrInvalidIssuer},
		{name: "query", issuer: "https://auth.example.com?x=1", wantErr: ErrInvalidIssuer},
		{name: "empty query", issuer: "https://auth.example.com/t?", wantErr: ErrInvalidIssuer},
		{name: "fragment", issuer: "https://auth.example.com#f", wantErr: ErrInvalidIssuer},
		{name: "empty fragment", issuer: "https://auth.example.com/#", wantErr: ErrInvalidIssuer},
		{name: "userinfo", issuer: "https://u:p@auth.example.com", wantErr: ErrInvalidIssuer},
		{name: "relative", issuer: "/tenant1", wantErr: ErrInvalidIssuer},
		{name: "empty", issuer: "", wantErr: ErrInvalidIssuer},
		{name: "no host", issuer: "https://", wantErr: ErrInvalidIssuer},
		{name: "port only", issuer: "https://:443/x", wantErr: ErrInvalidIssuer},
		{name: "other scheme", issuer: "ftp://auth.example.com", wantErr: ErrInvalidIssuer},
		{name: "opaque", issuer: "https:auth.example.com", wantErr: ErrInvalidIssuer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WellKnownURLs(tt.issuer)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WellKnownURLs(%q) error = %v, want %v", tt.issuer, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("WellKnownURLs(%q)\n got %q\nwant %q", tt.issuer, got, tt.want)
			}
		})
	}
}
