package introspect

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate"
)

// FuzzParseResponse feeds arbitrary bodies to the response parser. The
// properties: no panic; every error wraps exactly one validate sentinel;
// an accepted response had "active": true, names the configured issuer
// (or none), contains the configured audience (scheme and host in any
// case) and an unexpired "exp", and
// Decode reads the same body.
func FuzzParseResponse(f *testing.F) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range []string{
		`{"active":true,"iss":"https://as.example.com","aud":"https://mcp.example.com/mcp","exp":1767330245,"scope":"a b","sub":"alice","client_id":"c","token_type":"Bearer"}`,
		// RFC 7662 §2.2 example (its exp is long past).
		`{"active":true,"client_id":"l238j323ds-23ij4","username":"jdoe","scope":"read write dolphin","sub":"Z5O3upPC88QrAjx00dis","aud":"https://protected.example.net/resource","iss":"https://server.example.com/","exp":1419356238,"iat":1419350238,"extension_field":"twenty-seven"}`,
		`{"active":false}`,
		`{"active":"true"}`,
		`{"active":true,"aud":["x","https://mcp.example.com/mcp"],"exp":1767330245.5}`,
		`{"active":true,"AUD":"x","aud":"https://mcp.example.com/mcp","exp":1767330245}`,
		`{"active":true,"aud":"https://mcp.example.com/mcp","exp":1767330245,"cnf":{"jkt":"x"}}`,
		`{"active":true,"aud":"https://mcp.example.com/mcp","exp":1e400}`,
		`{"active":true} {}`,
		"{\"active\":true,\"sub\":\"\xff\"}",
		`[`, ``, `null`, `{"a":[[[[[[]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	in, err := New(Config{
		Issuer: "https://as.example.com", Endpoint: "https://as.example.com/introspect",
		Audiences: []string{"https://mcp.example.com/mcp"}, ClientID: "c", ClientSecret: "s",
		TenantClaim: "tid", Now: func() time.Time { return now },
	})
	if err != nil {
		f.Fatal(err)
	}
	sentinels := []error{
		validate.Error{Reason: "malformed"}, validate.Error{Reason: "type"}, validate.Error{Reason: "issuer"}, validate.Error{Reason: "audience"}, validate.Error{Reason: "expired"},
		validate.Error{Reason: "not_yet_valid"}, validate.Error{Reason: "issued_at"}, validate.Error{Reason: "missing_claim"}, validate.Error{Reason: "inactive"},
		validate.Error{Reason: "sender_constrained"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := in.parseResponse(body, now)
		if err != nil {
			n := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					n++
				}
			}
			if n != 1 || c != nil {
				t.Fatalf("err = %v wraps %d sentinels, claims %v", err, n, c)
			}
			return
		}
		audOK := slices.ContainsFunc(c.Audience, func(a string) bool {
			return len(a) == len("https://mcp.example.com/mcp") && strings.EqualFold(a[:len(a)-4], "https://mcp.example.com") && strings.HasSuffix(a, "/mcp")
		})
		if c.Issuer != "https://as.example.com" || !audOK || !now.Before(c.Expiry.Add(in.cfg.Leeway)) {
			t.Fatalf("accepted %q as %+v", body, c)
		}
		var m map[string]any
		if err := c.Decode(&m); err != nil || m["active"] != true {
			t.Fatalf("Decode = %v, %v", m, err)
		}
	})
}
