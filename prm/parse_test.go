package prm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestParse: Parse applies RFC 9728 §3.3 and nothing a server merely
// SHOULD NOT do.
func TestParse(t *testing.T) {
	const res = "https://mcp.example.com/mcp"
	doc := func(extra string) string {
		return `{"resource":"` + res + `","authorization_servers":["https://auth.example.com"]` + extra + `}`
	}
	tests := []struct {
		name, body, want string
		wantErr          error
		wantAS           []string
	}{
		{name: "minimal", body: doc(""), want: res},
		{name: "offline_access in scopes_supported accepted", body: doc(`,"scopes_supported":["files:read","offline_access"]`), want: res},
		{name: "unknown bearer method accepted", body: doc(`,"bearer_methods_supported":["header","dpop-header"]`), want: res},
		{name: "empty bearer methods accepted", body: doc(`,"bearer_methods_supported":[]`), want: res},
		{name: "jwks_uri over http accepted (not used by a client)", body: doc(`,"jwks_uri":"http://keys.example.com/jwks"`), want: res},
		{name: "signing alg none accepted (not used by a client)", body: doc(`,"resource_signing_alg_values_supported":["none"]`), want: res},
		{name: "invalid scope token passed through", body: doc(`,"scopes_supported":["a b"]`), want: res},
		{name: "unknown members ignored", body: doc(`,"x_vendor":{"a":1}`), want: res},
		{name: "unusable authorization servers dropped",
			body: `{"resource":"` + res + `","authorization_servers":["http://auth.example.com","https://auth.example.com?x=1","https://ok.example.com","not a url"]}`,
			want: res, wantAS: []string{"https://ok.example.com"}},
		{name: "loopback http authorization server kept", body: `{"resource":"` + res + `","authorization_servers":["http://127.0.0.1:9000"]}`, want: res, wantAS: []string{"http://127.0.0.1:9000"}},
		{name: "no authorization server", body: `{"resource":"` + res + `"}`, want: res, wantErr: ErrInvalidMetadata},
		{name: "only unusable authorization servers", body: `{"resource":"` + res + `","authorization_servers":["http://auth.example.com"]}`, want: res, wantErr: ErrInvalidMetadata},
		{name: "resource mismatch", body: doc(""), want: "https://mcp.example.com", wantErr: ErrResourceMismatch},
		{name: "resource trailing slash is a mismatch", body: doc(""), want: res + "/", wantErr: ErrResourceMismatch},
		{name: "resource case is a mismatch", body: doc(""), want: "HTTPS://mcp.example.com/mcp", wantErr: ErrResourceMismatch},
		{name: "empty want", body: doc(""), want: "", wantErr: ErrInvalidResource},
		{name: "malformed JSON", body: `{"resource":`, want: res, wantErr: ErrInvalidMetadata},
		{name: "array", body: `[]`, want: res, wantErr: ErrInvalidMetadata},
		{name: "null", body: `null`, want: res, wantErr: ErrInvalidMetadata},
		{name: "trailing data", body: doc("") + `{}`, want: res, wantErr: ErrInvalidMetadata},
		{name: "wrong member type", body: doc(`,"scopes_supported":"files:read"`), want: res, wantErr: ErrInvalidMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.body), tt.want)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if m != nil {
					t.Errorf("Parse returned %v with an error", m)
				}
				return
			}
			want := tt.wantAS
			if want == nil {
				want = []string{"https://auth.example.com"}
			}
			if !reflect.DeepEqual(m.AuthorizationServers, want) {
				t.Errorf("AuthorizationServers = %q, want %q", m.AuthorizationServers, want)
			}
		})
	}
}

func TestParseTestdata(t *testing.T) {
	for _, name := range []string{"full.json", "spec_tutorial.json", "offline_access.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		want := loadJSON(t, name)
		m, err := Parse(b, want.Resource)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(*m, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, *m, want)
		}
	}
}

// FuzzParse: Parse never panics, and what it returns names the expected
// resource and only usable authorization servers.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["http://a","https://b"],"scopes_supported":["offline_access"]}`,
		`{"resource":1}`, `[]`, ``, `{"resource":"https://mcp.example.com/mcp"}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body, "https://mcp.example.com/mcp")
		if err != nil {
			return
		}
		if m.Resource != "https://mcp.example.com/mcp" || len(m.AuthorizationServers) == 0 {
			t.Fatalf("Parse accepted %+v", m)
		}
		for _, s := range m.AuthorizationServers {
			if checkURL(s, urlRules{secure: true, noQuery: true}) != nil {
				t.Fatalf("unusable authorization server %q kept", s)
			}
		}
	})
}
