package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestResourceQueryFragment: a query or fragment never moves a URI out of
// an exact rule (issue #11 item 5). The test policy has an exact rule
// file:///projects/myapp/config.json (files:config) inside the prefix rule
// file:///projects/ (files:read). A token with files:read but not
// files:config must be refused for every variant of the exact URI; before
// issue #11 the variants with "?" or "#" matched only the prefix rule and
// were served with files:read.
func TestResourceQueryFragment(t *testing.T) {
	const exact = "file:///projects/myapp/config.json"
	f := newFixture(t, nil)
	weak := f.token(t, "mcp", "res:read", "files:read")
	strong := f.token(t, "mcp", "res:read", "files:read", "files:config")
	for _, suffix := range []string{"", "?", "?x=1", "#", "#x", "?x=1#y", "?#", "?a=%2F"} {
		uri := exact + suffix
		t.Run(suffix, func(t *testing.T) {
			for _, tc := range []struct {
				tok  string
				want int
			}{{weak, http.StatusForbidden}, {strong, http.StatusOK}} {
				rec := httptest.NewRecorder()
				f.m.Handler(echoHandler()).ServeHTTP(rec, rpcRequest(modernRev, "resources/read", uri, tc.tok))
				if rec.Code != tc.want {
					t.Errorf("%q: got %d %q, want %d", uri, rec.Code, rec.Header().Get("WWW-Authenticate"), tc.want)
				}
			}
		})
	}
}

// TestCanonicalResource: the canonical form is the URI without query and
// fragment; other spellings are refused.
func TestCanonicalResource(t *testing.T) {
	tests := []struct {
		uri, want string
		ok        bool
	}{
		{"file:///projects/myapp/config.json", "file:///projects/myapp/config.json", true},
		{"file:///projects/myapp/config.json?", "file:///projects/myapp/config.json", true},
		{"file:///projects/myapp/config.json?x=1", "file:///projects/myapp/config.json", true},
		{"file:///projects/myapp/config.json#", "file:///projects/myapp/config.json", true},
		{"file:///projects/myapp/config.json#x", "file:///projects/myapp/config.json", true},
		{"file:///projects/myapp/config.json?x=../..#/../y", "file:///projects/myapp/config.json", true},
		{"https://h.example/p?q=a//b#x//y", "https://h.example/p", true},
		{"https://h.example:8443/p", "https://h.example:8443/p", true},
		{"file:///projects/my%20file.txt", "file:///projects/my%20file.txt", true},
		{"file:///a(b)!*'$&+,;=:@", "file:///a(b)!*'$&+,;=:@", true},
		{"urn:example:a?x#y", "urn:example:a", true},
		{"custom:/x#y", "custom:/x", true},
		// The existing escape forms.
		{"file:///projects/myapp/config%2Ejson", "", false},
		{"file:///projects/myapp/config%2ejson?x", "", false},
		{"file:///projects/../projects/myapp/config.json", "", false},
		{"file:///projects/%2e%2e/secret", "", false},
		{"file:///projects/./myapp/config.json", "", false},
		{"file:///projects//myapp/config.json", "", false},
		{"file:///projects/%73ecret", "", false},
		{"file:///projects/secret%2Fkeys", "", false},
		{"file:///projects/a%5Cb", "", false},
		{"file:///projects\\secret", "", false},
		{"file:///projects/a%7e", "", false},
		{"file:///projects/a%", "", false},
		{"file:///projects/a%zz", "", false},
		{"FILE:///projects/a", "", false},
		{"File:///projects/a", "", false},
		{"https://H.example/p", "", false},
		// Not canonicalisable: relative, raw bytes net/url re-encodes.
		{"projects/a", "", false},
		{"/projects/a", "", false},
		{"file:///é", "", false},
		{"file:///a b", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := canonicalResource(tt.uri)
		if ok != tt.ok || got != tt.want {
			t.Errorf("canonicalResource(%q) = %q, %t; want %q, %t", tt.uri, got, ok, tt.want, tt.ok)
		}
	}
}

// TestResourceRuleConfig: rules that could never match (a query or
// fragment, or a non-canonical exact URI) are refused by New.
func TestResourceRuleConfig(t *testing.T) {
	for _, r := range []ResourceRule{
		{URI: "file:///a?x=1"},
		{URI: "file:///a#x"},
		{URI: "file:///a?", Prefix: true},
		{URI: "FILE:///a"},
		{URI: "file:///a/../b"},
		{URI: "file:///%61"},
	} {
		_, err := New(Config{
			Validator:  fakeValidator{claims: fakeClaims()},
			Metadata:   testConfig(nil, newFixture(t, nil).iss).Metadata,
			Operations: OperationPolicy{Resources: []ResourceRule{r}},
		})
		if !errors.Is(err, errConfig) {
			t.Errorf("rule %+v: New error = %v, want errConfig", r, err)
		}
	}
}

// FuzzCanonicalResource: the canonical form is a prefix of the URI, has
// no query or fragment, and is itself canonical (idempotent).
func FuzzCanonicalResource(f *testing.F) {
	for _, s := range []string{"file:///projects/myapp/config.json?x=1#y", "urn:a:b?c", "https://H/p", "file:///%2e%2e/x", "custom:/x#", "file:///a(b)", "a:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		key, ok := canonicalResource(uri)
		if !ok {
			return
		}
		if len(key) > len(uri) || uri[:len(key)] != key {
			t.Fatalf("canonicalResource(%q) = %q: not a prefix", uri, key)
		}
		if k2, ok2 := canonicalResource(key); !ok2 || k2 != key {
			t.Fatalf("canonicalResource(%q) = %q, %t: not idempotent (from %q)", key, k2, ok2, uri)
		}
		for i := 0; i < len(key); i++ {
			if key[i] == '#' {
				t.Fatalf("canonical %q of %q has a fragment", key, uri)
			}
		}
	})
}
