package challenge

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzRoundTrip renders a challenge built from fuzzed fields and checks the
// round-trip property parse(c.String()) == []Challenge{c.normalize()}, that
// normalize is idempotent, and that no control byte is ever rendered.
func FuzzRoundTrip(f *testing.F) {
	f.Add("", "", "", "", "", "", "", "", "", "")
	f.Add("Bearer", "mcp", "invalid_token", "The token expired", "files:read files:write", rm, "error_uri", "https://e/", "", "")
	f.Add("bearer", `a "q" \b`, "insufficient_scope", "naïve\r\n", "offline_access a a", rm+"\n", "REALM", "x", "Foo", "\x00")
	f.Add("Negotiate", "", "", "", "", "", "", "", "", "abc==")
	f.Add("DPoP", "", "invalid_dpop_proof", "x, y=z", "", "", "algs", "ES256 PS256", "Algs", "")
	f.Fuzz(func(t *testing.T, scheme, realm, code, desc, scope, meta, k1, v1, k2, v2 string) {
		c := Challenge{
			Scheme: scheme, Realm: realm, Error: ErrorCode(code), ErrorDescription: desc,
			Scope: strings.Split(scope, " "), ResourceMetadata: meta,
			Params: map[string]string{k1: v1, k2: v2},
		}
		if scheme != "Bearer" { // also exercise token68 on other schemes
			c.Token68 = v2
		}
		s := c.String()
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 && s[i] != '\t' || s[i] == 0x7f {
				t.Fatalf("String() contains control byte %#x: %q", s[i], s)
			}
		}
		n := c.normalize()
		if nn := n.normalize(); !reflect.DeepEqual(nn, n) {
			t.Fatalf("normalize not idempotent:\n%#v\n%#v", n, nn)
		}
		if n.String() != s {
			t.Fatalf("String() of normalized differs: %q vs %q", n.String(), s)
		}
		if s == "" {
			// Nothing to render: never a bare scheme (RFC 6750 §3).
			if !n.empty() || c.Err() == nil {
				t.Fatalf("empty rendering of a challenge with parameters: %#v", n)
			}
			return
		}
		if c.Err() != nil || strings.TrimSpace(s) == n.Scheme {
			t.Fatalf("String() = %q, Err() = %v: a bare scheme", s, c.Err())
		}
		got, err := parse(s)
		if err != nil {
			t.Fatalf("parse(%q): %v", s, err)
		}
		if want := []Challenge{n}; !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(%q)\n got %#v\nwant %#v", s, got, want)
		}
	})
}

// FuzzParse feeds arbitrary header values to Parse: it must not panic, and
// whatever parses must re-render to a value that parses to the normalized
// challenges (render/parse is stable after one pass).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		``, `Bearer`, `, ,`,
		`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`,
		`Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required"`,
		`Bearer realm="mcp", resource_metadata="https://your-server.com/.well-known/oauth-protected-resource"`,
		`Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", error="invalid_token"`,
		`Basic realm="x", Bearer error="invalid_token"`,
		`Negotiate abc==, Bearer realm="x"`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		`Bearer realm="a\\b\"c", , error=x,`,
		`Bearer realm="a" error="b"`, `Bearer realm=`, "Bearer realm=\"\xff\"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		cs, err := parse(header)
		if err != nil {
			return
		}
		var rendered []string
		var want []Challenge
		for _, c := range cs {
			if c.Err() != nil {
				continue // never rendered: no bare scheme
			}
			rendered = append(rendered, c.String())
			want = append(want, c.normalize())
		}
		if len(rendered) == 0 {
			return
		}
		got, err := ParseAll(rendered)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", rendered, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("unstable:\ninput %q\n got %#v\nwant %#v", header, got, want)
		}
		joined, err := parse(strings.Join(rendered, ", "))
		if err != nil || !reflect.DeepEqual(joined, want) {
			t.Fatalf("joined re-parse of %q: %v\n got %#v\nwant %#v", rendered, err, joined, want)
		}
	})
}
