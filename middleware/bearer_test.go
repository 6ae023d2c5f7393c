package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
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
		{name: "no header", wantErr: errNoToken},
		{name: "empty header", auth: []string{""}, wantErr: errNoToken},
		{name: "basic", auth: []string{"Basic dXNlcjpwYXNz"}, wantErr: errNoToken},
		{name: "dpop", auth: []string{"DPoP abc"}, wantErr: errNoToken},
		{name: "bearerx scheme", auth: []string{"Bearerx abc"}, wantErr: errNoToken},
		{name: "two lines", auth: []string{"Bearer a", "Bearer b"}, wantErr: errMultipleTokens},
		{name: "scheme only", auth: []string{"Bearer"}, wantErr: errMalformedHeader},
		{name: "scheme and space", auth: []string{"Bearer "}, wantErr: errMalformedHeader},
		{name: "tab separator", auth: []string{"Bearer\tabc"}, wantErr: errMalformedHeader},
		{name: "two tokens", auth: []string{"Bearer a b"}, wantErr: errMalformedHeader},
		{name: "comma", auth: []string{"Bearer a,b"}, wantErr: errMalformedHeader},
		{name: "padding inside", auth: []string{"Bearer a=b"}, wantErr: errMalformedHeader},
		{name: "only padding", auth: []string{"Bearer =="}, wantErr: errMalformedHeader},
		{name: "quoted", auth: []string{`Bearer "abc"`}, wantErr: errMalformedHeader},
		{name: "non-ASCII", auth: []string{"Bearer abcé"}, wantErr: errMalformedHeader},
		{name: "query token alone", url: "/mcp?access_token=abc", wantErr: errTokenInQuery},
		{name: "query token with header", url: "/mcp?access_token=abc", auth: []string{"Bearer abc"}, wantErr: errTokenInQuery},
		{name: "query token percent-encoded name", url: "/mcp?access%5Ftoken=abc", auth: []string{"Bearer abc"}, wantErr: errTokenInQuery},
		{name: "query token empty value", url: "/mcp?x=1&access_token=", auth: []string{"Bearer abc"}, wantErr: errTokenInQuery},
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
			got, err := bearerToken(r, true)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("bearerToken() error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("bearerToken() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBearerFormBodyIgnored: a form-encoded access_token (RFC 6750 §2.2) is
// never looked for, and the body is not consumed.
func TestBearerFormBodyIgnored(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", stringsReader("access_token=abc"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := bearerToken(r, true); !errors.Is(err, errNoToken) {
		t.Fatalf("bearerToken() error = %v, want errNoToken", err)
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

// TestIsBearerScheme checks the byte-wise scheme match against
// strings.EqualFold for every rune in every position of "Bearer", and for
// a few lengths around it.
func TestIsBearerScheme(t *testing.T) {
	const want = "Bearer"
	for i := range len(want) {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			s := want[:i] + string(r) + want[i+1:]
			if got, exp := isBearerScheme(s), strings.EqualFold(s, want); got != exp {
				t.Fatalf("isBearerScheme(%q) = %v, strings.EqualFold %v", s, got, exp)
			}
		}
	}
	for _, s := range []string{"", "B", "Beare", "Bearerr", "bearer", "BEARER", "bEaReR", "Bearer\x00", "DPoP"} {
		if got, exp := isBearerScheme(s), strings.EqualFold(s, want); got != exp {
			t.Errorf("isBearerScheme(%q) = %v, strings.EqualFold %v", s, got, exp)
		}
	}
}
