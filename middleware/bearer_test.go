package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		auth    []string
		want    string
		wantErr error
	}{
		{name: "ok", auth: []string{"Bearer abc.def-ghi_jkl~+/="}, want: "abc.def-ghi_jkl~+/="},
		{name: "lower-case scheme", auth: []string{"bearer abc"}, want: "abc"},
		{name: "upper-case scheme", auth: []string{"BEARER abc"}, want: "abc"},
		{name: "several spaces (1*SP)", auth: []string{"Bearer   abc"}, want: "abc"},
		{name: "padding", auth: []string{"Bearer abc=="}, want: "abc=="},
		{name: "no header", wantErr: ErrNoToken},
		{name: "empty header", auth: []string{""}, wantErr: ErrNoToken},
		{name: "basic", auth: []string{"Basic dXNlcjpwYXNz"}, wantErr: ErrNoToken},
		{name: "dpop", auth: []string{"DPoP abc"}, wantErr: ErrNoToken},
		{name: "bearerx scheme", auth: []string{"Bearerx abc"}, wantErr: ErrNoToken},
		{name: "two lines", auth: []string{"Bearer a", "Bearer b"}, wantErr: ErrMultipleTokens},
		{name: "scheme only", auth: []string{"Bearer"}, wantErr: ErrMalformedHeader},
		{name: "scheme and space", auth: []string{"Bearer "}, wantErr: ErrMalformedHeader},
		{name: "tab separator", auth: []string{"Bearer\tabc"}, wantErr: ErrMalformedHeader},
		{name: "two tokens", auth: []string{"Bearer a b"}, wantErr: ErrMalformedHeader},
		{name: "comma", auth: []string{"Bearer a,b"}, wantErr: ErrMalformedHeader},
		{name: "padding inside", auth: []string{"Bearer a=b"}, wantErr: ErrMalformedHeader},
		{name: "only padding", auth: []string{"Bearer =="}, wantErr: ErrMalformedHeader},
		{name: "quoted", auth: []string{`Bearer "abc"`}, wantErr: ErrMalformedHeader},
		{name: "non-ASCII", auth: []string{"Bearer abcé"}, wantErr: ErrMalformedHeader},
		{name: "query token alone", url: "/mcp?access_token=abc", wantErr: ErrTokenInQuery},
		{name: "query token with header", url: "/mcp?access_token=abc", auth: []string{"Bearer abc"}, wantErr: ErrTokenInQuery},
		{name: "query token percent-encoded name", url: "/mcp?access%5Ftoken=abc", auth: []string{"Bearer abc"}, wantErr: ErrTokenInQuery},
		{name: "query token empty value", url: "/mcp?x=1&access_token=", auth: []string{"Bearer abc"}, wantErr: ErrTokenInQuery},
		{name: "other query ok", url: "/mcp?x=access_tokens", auth: []string{"Bearer abc"}, want: "abc"},
		{name: "similar query name ok", url: "/mcp?access_token_hint=1", auth: []string{"Bearer abc"}, want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			if u == "" {
				u = "/mcp"
			}
			r := httptest.NewRequest(http.MethodGet, u, nil)
			for _, a := range tt.auth {
				r.Header.Add("Authorization", a)
			}
			got, err := BearerToken(r)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("BearerToken() error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("BearerToken() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBearerFormBodyIgnored: a form-encoded access_token (RFC 6750 §2.2) is
// never looked for, and the body is not consumed.
func TestBearerFormBodyIgnored(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", stringsReader("access_token=abc"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := BearerToken(r); !errors.Is(err, ErrNoToken) {
		t.Fatalf("BearerToken() error = %v, want ErrNoToken", err)
	}
	if r.Form != nil || r.PostForm != nil {
		t.Errorf("BearerToken parsed the form")
	}
	b := make([]byte, 64)
	n, _ := r.Body.Read(b)
	if got := string(b[:n]); got != "access_token=abc" {
		t.Errorf("body after BearerToken = %q, want it untouched", got)
	}
}
