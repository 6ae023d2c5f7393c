package asmeta

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

func FuzzMetadata(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","jwks_uri":"https://as.example/jwks","response_types_supported":["code"]}`), "https://as.example")
	f.Add([]byte(`{"issuer":"https://honest.example"}`), "https://attacker.example")
	f.Add([]byte(`{"issuer":"http://127.0.0.1:1","jwks_uri":"http://localhost/x","response_types_supported":["code"],"grant_types_supported":["implicit"],"authorization_endpoint":"http://[::1]/a"}`), "http://127.0.0.1:1")
	f.Add([]byte(`{"issuer":1}`), "")
	f.Add([]byte(`null`), "https://a")
	f.Fuzz(func(t *testing.T, data []byte, issuer string) {
		var m Metadata
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		if err := m.Validate(issuer); err != nil {
			return
		}
		if m.Issuer != issuer {
			t.Fatalf("Validate accepted issuer %q for %q", m.Issuer, issuer)
		}
		if len(m.ResponseTypesSupported) == 0 {
			t.Fatalf("Validate accepted a document without response_types_supported")
		}
		if m.JWKSURI != "" {
			if _, err := fetch.CheckURL(m.JWKSURI, true); err != nil {
				t.Fatalf("Validate accepted jwks_uri %q: %v", m.JWKSURI, err)
			}
		}
	})
}

func FuzzWellKnownURLs(f *testing.F) {
	for _, s := range []string{"https://auth.example.com/tenant1", "https://auth.example.com", "https://a/", "http://127.0.0.1:1/x/", "https://a/%2F/", "https://a//", "https://[::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, issuer string) {
		urls, err := WellKnownURLs(issuer)
		if err != nil {
			return
		}
		if len(urls) != 2 && len(urls) != 3 {
			t.Fatalf("got %d urls", len(urls))
		}
		if !strings.Contains(urls[0], oAuthSuffix) {
			t.Fatalf("first url %q lacks %s", urls[0], oAuthSuffix)
		}
		for _, u := range urls {
			pu, err := fetch.CheckURL(u, true)
			if err != nil {
				t.Fatalf("WellKnownURLs(%q) produced %q: %v", issuer, u, err)
			}
			if pu.RawQuery != "" {
				t.Fatalf("WellKnownURLs(%q) produced %q with a query", issuer, u)
			}
		}
	})
}
