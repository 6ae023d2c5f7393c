package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestOrigin(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origins []string
		wantErr error
	}{
		{name: "absent", wantErr: nil},
		{name: "resource origin", origins: []string{"https://mcp.example.com"}},
		{name: "resource origin default port", origins: []string{"https://mcp.example.com:443"}},
		{name: "resource origin upper case", origins: []string{"HTTPS://MCP.EXAMPLE.COM"}},
		{name: "resource origin trailing slash", origins: []string{"https://mcp.example.com/"}},
		{name: "other port", origins: []string{"https://mcp.example.com:8443"}, wantErr: errOrigin},
		{name: "http scheme", origins: []string{"http://mcp.example.com"}, wantErr: errOrigin},
		{name: "subdomain", origins: []string{"https://evil.mcp.example.com"}, wantErr: errOrigin},
		{name: "suffix trick", origins: []string{"https://mcp.example.com.evil.example"}, wantErr: errOrigin},
		{name: "null", origins: []string{"null"}, wantErr: errOrigin},
		{name: "empty", origins: []string{""}, wantErr: errOrigin},
		{name: "with path", origins: []string{"https://mcp.example.com/x"}, wantErr: errOrigin},
		{name: "with userinfo", origins: []string{"https://u@mcp.example.com"}, wantErr: errOrigin},
		{name: "repeated", origins: []string{"https://mcp.example.com", "https://mcp.example.com"}, wantErr: errOrigin},
		{name: "listed", allowed: []string{"http://localhost:6274"}, origins: []string{"http://localhost:6274"}},
		{name: "listed default port", allowed: []string{"http://app.example:80"}, origins: []string{"http://app.example"}},
		{name: "listed other scheme", allowed: []string{"vscode-webview://abc"}, origins: []string{"vscode-webview://abc"}},
		{name: "not listed", allowed: []string{"http://localhost:6274"}, origins: []string{"http://localhost:6275"}, wantErr: errOrigin},
		{name: "any", allowed: []string{"*"}, origins: []string{"http://evil.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newOriginPolicy(resource, tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, resource, nil)
			for _, o := range tt.origins {
				r.Header.Add("Origin", o)
			}
			if err := p.check(r); !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("check() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestOriginBeforeToken: an Origin mismatch is answered before the token
// is looked at, and without a challenge.
func TestOriginBeforeToken(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims("mcp")}, nil)
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Origin", "http://evil.example")
	rec := httptest.NewRecorder()
	m.Handler(echoHandler()).ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || rec.Header().Get("WWW-Authenticate") != "" || rec.Body.String() != bodyOrigin {
		t.Fatalf("got %d %v %s, want 403 without challenge", rec.Code, rec.Header(), rec.Body)
	}
}
