package cimd

import (
	"errors"
	"strings"
	"testing"
)

func TestRedirectURIAllowed(t *testing.T) {
	reg := []string{
		"http://127.0.0.1:3000/callback",
		"http://localhost:3000/callback",
		"http://[::1]/cb?x=1",
		"https://app.example.com/oauth/callback",
	}
	tests := []struct {
		name      string
		requested string
		want      bool
	}{
		{"exact loopback", "http://127.0.0.1:3000/callback", true},
		{"exact localhost", "http://localhost:3000/callback", true},
		{"exact https", "https://app.example.com/oauth/callback", true},
		{"loopback other port", "http://127.0.0.1:51234/callback", true},
		{"loopback no port", "http://127.0.0.1/callback", true},
		{"ipv6 loopback port", "http://[::1]:8080/cb?x=1", true},
		{"ipv6 loopback no port", "http://[::1]/cb?x=1", true},

		{"localhost other port", "http://localhost:4000/callback", false},
		{"loopback other path", "http://127.0.0.1:3000/callback2", false},
		{"loopback path prefix", "http://127.0.0.1:3000/callback/x", false},
		{"loopback trailing slash", "http://127.0.0.1:3000/callback/", false},
		{"loopback extra query", "http://127.0.0.1:3000/callback?x=1", false},
		{"ipv6 loopback other query", "http://[::1]:8080/cb?x=2", false},
		{"ipv6 loopback no query", "http://[::1]:8080/cb", false},
		{"loopback fragment", "http://127.0.0.1:3000/callback#x", false},
		{"loopback userinfo", "http://u@127.0.0.1:3000/callback", false},
		{"loopback empty port", "http://127.0.0.1:/callback", false},
		{"loopback port zero", "http://127.0.0.1:0/callback", false},
		{"loopback port too big", "http://127.0.0.1:70000/callback", false},
		{"loopback port letters", "http://127.0.0.1:ab/callback", false},
		{"other loopback ip", "http://127.0.0.2:3000/callback", false},
		{"https loopback", "https://127.0.0.1:3000/callback", false},
		{"uppercase scheme", "HTTP://127.0.0.1:3000/callback", false},
		{"https trailing slash", "https://app.example.com/oauth/callback/", false},
		{"https case", "https://APP.example.com/oauth/callback", false},
		{"https port", "https://app.example.com:443/oauth/callback", false},
		{"https encoded", "https://app.example.com/oauth/%63allback", false},
		{"https query added", "https://app.example.com/oauth/callback?next=evil", false},
		{"empty", "", false},
		{"attacker", "https://evil.example/callback", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redirectURIAllowed(reg, tt.requested); got != tt.want {
				t.Errorf("redirectURIAllowed(%q) = %v, want %v", tt.requested, got, tt.want)
			}
		})
	}
	if redirectURIAllowed(nil, "http://127.0.0.1/cb") {
		t.Error("nil registered list allowed a redirect")
	}
}

func TestCheckRedirectURI(t *testing.T) {
	tests := []struct {
		name    string
		uri     string
		appType string
		private bool
		wantErr error
	}{
		{"https", "https://app.example.com/cb", "", false, nil},
		{"https query", "https://app.example.com/cb?a=b", "", false, nil},
		{"loopback v4", "http://127.0.0.1:3000/cb", "", false, nil},
		{"loopback v6", "http://[::1]:3000/cb", "", false, nil},
		{"localhost", "http://localhost/cb", "", false, nil},
		{"web https", "https://app.example.com/cb", appTypeWeb, false, nil},
		{"native loopback", "http://127.0.0.1/cb", appTypeNative, false, nil},
		{"native private-use", "com.example.app:/oauth2redirect", appTypeNative, true, nil},
		{"private-use any type", "com.example.app:/cb", "", true, nil},
		{"private-use authority", "com.example.app://cb", appTypeNative, true, nil},

		{"empty", "", "", false, errInvalidRedirectURI},
		{"relative", "/callback", "", false, errInvalidRedirectURI},
		{"no scheme", "app.example.com/cb", "", false, errInvalidRedirectURI},
		{"http remote", "http://app.example.com/cb", "", false, errInvalidRedirectURI},
		{"http private ip", "http://10.0.0.1/cb", "", false, errInvalidRedirectURI},
		{"http other loopback", "http://127.0.0.2/cb", "", false, errInvalidRedirectURI},
		{"http localhost subdomain", "http://evil.localhost/cb", "", false, errInvalidRedirectURI},
		{"fragment", "https://app.example.com/cb#x", "", false, errInvalidRedirectURI},
		{"empty fragment", "https://app.example.com/cb#", "", false, errInvalidRedirectURI},
		{"wildcard host", "https://*.example.com/cb", "", false, errInvalidRedirectURI},
		{"wildcard path", "https://app.example.com/*", "", false, errInvalidRedirectURI},
		{"javascript", "javascript:alert(1)", "", true, errInvalidRedirectURI},
		{"javascript comment", "javascript://app.example.com/%0aalert(1)", "", true, errInvalidRedirectURI},
		{"data", "data:text/html,<script>alert(1)</script>", "", true, errInvalidRedirectURI},
		{"file", "file:///etc/passwd", "", true, errInvalidRedirectURI},
		{"vbscript", "vbscript:msgbox", "", true, errInvalidRedirectURI},
		{"ftp", "ftp://app.example.com/cb", "", false, errInvalidRedirectURI},
		{"custom scheme refused by default", "com.example.app:/cb", appTypeNative, false, errInvalidRedirectURI},
		{"custom scheme without dot", "myapp://cb", appTypeNative, true, errInvalidRedirectURI},
		{"uppercase scheme", "HTTPS://app.example.com/cb", "", false, errInvalidRedirectURI},
		{"userinfo https", "https://u:p@app.example.com/cb", "", false, errInvalidRedirectURI},
		{"userinfo loopback", "http://u@127.0.0.1/cb", "", false, errInvalidRedirectURI},
		{"https no host", "https:///cb", "", false, errInvalidRedirectURI},
		{"https opaque", "https:app.example.com", "", false, errInvalidRedirectURI},
		{"space", "https://app.example.com/c b", "", false, errInvalidRedirectURI},
		{"newline", "https://app.example.com/cb\r\nX: y", "", false, errInvalidRedirectURI},
		{"non-ascii", "https://äpp.example.com/cb", "", false, errInvalidRedirectURI},
		{"bad port", "http://127.0.0.1:99999/cb", "", false, errInvalidRedirectURI},
		{"empty port", "http://127.0.0.1:/cb", "", false, errInvalidRedirectURI},
		{"zone", "http://[::1%25lo]/cb", "", false, errInvalidRedirectURI},
		{"too long", "https://app.example.com/" + strings.Repeat("a", 2048), "", false, errInvalidRedirectURI},
		{"web loopback http", "http://127.0.0.1/cb", appTypeWeb, false, errInvalidRedirectURI},
		{"web loopback https", "https://localhost/cb", appTypeWeb, false, errInvalidRedirectURI},
		{"web private-use", "com.example.app:/cb", appTypeWeb, true, errInvalidRedirectURI},
		{"native https", "https://app.example.com/cb", appTypeNative, false, errInvalidRedirectURI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRedirectURI(tt.uri, tt.appType, tt.private)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("checkRedirectURI(%q, %q, %v) = %v, want %v", tt.uri, tt.appType, tt.private, err, tt.wantErr)
			}
		})
	}
}
