package cimd

import (
	"strings"
	"testing"
)

func TestIsClientIDURL(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"spec example", "https://app.example.com/oauth/client-metadata.json", true},
		{"draft example", "https://example.com/client.json", true},
		{"port", "https://example.com:8443/client.json", true},
		{"deep path", "https://example.com/a/b/c", true},
		{"trailing slash path", "https://example.com/client/", true},
		{"ipv6 literal", "https://[2001:4860::1]/c.json", true},
		{"percent-encoded letter", "https://example.com/%63lient.json", true},
		{"dots inside segment", "https://example.com/a..b/c.json", true},

		{"empty", "", false},
		{"http", "http://example.com/client.json", false},
		{"uppercase scheme", "HTTPS://example.com/client.json", false},
		{"no scheme", "example.com/client.json", false},
		{"opaque", "https:example.com/client.json", false},
		{"no host", "https:///client.json", false},
		{"only scheme", "https://", false},
		{"no path", "https://example.com", false},
		{"root path", "https://example.com/", false},
		{"root path with query", "https://example.com/?x=1", false},
		{"fragment", "https://example.com/client.json#x", false},
		{"empty fragment", "https://example.com/client.json#", false},
		{"userinfo", "https://user@example.com/client.json", false},
		{"user and password", "https://user:pw@example.com/client.json", false},
		{"empty userinfo", "https://@example.com/client.json", false},
		{"dot segment", "https://example.com/./client.json", false},
		{"dot dot segment", "https://example.com/a/../client.json", false},
		{"final dot dot", "https://example.com/a/..", false},
		{"encoded dot dot", "https://example.com/a/%2e%2e/client.json", false},
		{"encoded upper dot dot", "https://example.com/a/%2E%2E/client.json", false},
		{"mixed dot dot", "https://example.com/a/.%2e/client.json", false},
		{"encoded dot", "https://example.com/%2e/client.json", false},
		{"encoded slash", "https://example.com/a%2f..%2fclient.json", false},
		{"encoded backslash", "https://example.com/a%5cclient.json", false},
		{"backslash", `https://example.com/a\client.json`, false},
		{"bad escape", "https://example.com/%zz", false},
		{"query", "https://example.com/client.json?v=1", false},
		{"empty query", "https://example.com/client.json?", false},
		{"space", "https://example.com/client .json", false},
		{"tab", "https://example.com/client\t.json", false},
		{"newline", "https://example.com/client.json\n", false},
		{"non-ascii", "https://exämple.com/client.json", false},
		{"nul", "https://example.com/client.json\x00", false},
		{"ipv6 zone", "https://[fe80::1%25eth0]/client.json", false},
		{"empty port", "https://example.com:/client.json", false},
		{"port zero", "https://example.com:0/client.json", false},
		{"port too big", "https://example.com:65536/client.json", false},
		{"port letters", "https://example.com:ab/client.json", false},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isClientIDURL(tt.in); got != tt.want {
				t.Errorf("isClientIDURL(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCheckClientIDURLAllowQuery(t *testing.T) {
	const u = "https://example.com/client.json?tenant=a"
	if err := checkClientIDURL(u, false); err == nil {
		t.Errorf("query accepted without AllowQuery")
	}
	if err := checkClientIDURL(u, true); err != nil {
		t.Errorf("query refused with AllowQuery: %v", err)
	}
	// A query does not excuse a dot segment or a missing path.
	for _, bad := range []string{"https://example.com/../c?x", "https://example.com/?x", "https://example.com?x"} {
		if err := checkClientIDURL(bad, true); err == nil {
			t.Errorf("checkClientIDURL(%q, true) accepted", bad)
		}
	}
}

func TestCheckHTTPSURL(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"https://app.example.com", true},
		{"https://app.example.com/logo.png", true},
		{"http://app.example.com/logo.png", false},
		{"https://app.example.com/logo.png#x", false},
		{"https://u@app.example.com/logo.png", false},
		{"https:///logo.png", false},
		{"javascript:alert(1)", false},
		{"data:image/png;base64,AAAA", false},
		{"https://app.example.com/" + strings.Repeat("a", 2048), false},
	}
	for _, tt := range tests {
		if got := checkHTTPSURL("logo_uri", tt.in) == nil; got != tt.want {
			t.Errorf("checkHTTPSURL(%q) ok = %v, want %v", tt.in, got, tt.want)
		}
	}
}
