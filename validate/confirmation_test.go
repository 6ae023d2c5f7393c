package validate

import (
	"errors"
	"strings"
	"testing"
)

const testJKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"

// TestConfirmation drives "cnf" (RFC 7800 §3.1, RFC 9449 §6.1) with and
// without Config.AllowConfirmation.
func TestConfirmation(t *testing.T) {
	k := keys(t)
	allow := func(c *Config) { c.AllowConfirmation = true }
	withCnf := func(raw string) string {
		p := claimsJSON(baseClaims())
		return forge(t, k.es256, hdr(k.es256), strings.Replace(p, `{`, `{"cnf":`+raw+`,`, 1))
	}
	tests := []struct {
		name    string
		cnf     string // raw JSON; "" for no cnf
		mut     func(*Config)
		wantJKT string
		wantErr error
	}{
		{name: "no cnf", mut: nil},
		{name: "no cnf allowed", mut: allow},
		{name: "jkt refused by default", cnf: `{"jkt":"` + testJKT + `"}`, wantErr: errSenderConstrained},
		{name: "cnf null refused by default", cnf: `null`, wantErr: errSenderConstrained},
		{name: "cnf string refused by default", cnf: `"x"`, wantErr: errSenderConstrained},
		{name: "x5t refused by default", cnf: `{"x5t#S256":"` + testJKT + `"}`, wantErr: errSenderConstrained},
		{name: "jkt allowed", cnf: `{"jkt":"` + testJKT + `"}`, mut: allow, wantJKT: testJKT},
		{name: "jkt escaped allowed", cnf: `{"\u006akt":"` + testJKT + `"}`, mut: allow, wantJKT: testJKT},
		{name: "x5t#S256 refused when allowed", cnf: `{"x5t#S256":"` + testJKT + `"}`, mut: allow, wantErr: errSenderConstrained},
		{name: "jkt and x5t#S256 refused when allowed", cnf: `{"jkt":"` + testJKT + `","x5t#S256":"` + testJKT + `"}`, mut: allow, wantErr: errSenderConstrained},
		{name: "jwk member refused when allowed", cnf: `{"jwk":{"kty":"EC"}}`, mut: allow, wantErr: errSenderConstrained},
		{name: "not an object", cnf: `"` + testJKT + `"`, mut: allow, wantErr: errMalformed},
		{name: "array", cnf: `[]`, mut: allow, wantErr: errMalformed},
		{name: "null", cnf: `null`, mut: allow, wantErr: errMalformed},
		{name: "empty object", cnf: `{}`, mut: allow, wantErr: errMalformed},
		{name: "jkt empty", cnf: `{"jkt":""}`, mut: allow, wantErr: errMalformed},
		{name: "jkt number", cnf: `{"jkt":1}`, mut: allow, wantErr: errMalformed},
		{name: "jkt padded", cnf: `{"jkt":"` + testJKT + `="}`, mut: allow, wantErr: errMalformed},
		{name: "jkt standard alphabet", cnf: `{"jkt":"ab+/"}`, mut: allow, wantErr: errMalformed},
		{name: "jkt duplicate", cnf: `{"jkt":"` + testJKT + `","jkt":"AAAA"}`, mut: allow, wantErr: errMalformed},
		{name: "jkt case variant", cnf: `{"jkt":"` + testJKT + `","JKT":"AAAA"}`, mut: allow, wantErr: errMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mint(t, k.es256, baseClaims())
			if tt.cnf != "" {
				tok = withCnf(tt.cnf)
			}
			for _, cache := range []int{-1, 16} {
				v := newTestValidator(t, func(c *Config) {
					c.CacheSize = cache
					if tt.mut != nil {
						tt.mut(c)
					}
				})
				for range 2 { // the second call is a cache hit when cached
					c, err := v.Validate(t.Context(), tok)
					if tt.wantErr != nil {
						if !errors.Is(err, tt.wantErr) || !wrapsOneSentinel(err) || c != nil {
							t.Fatalf("Validate = %+v, %v; want %v", c, err, tt.wantErr)
						}
						continue
					}
					if err != nil {
						t.Fatalf("Validate: %v", err)
					}
					switch {
					case tt.wantJKT == "" && c.Confirmation != nil:
						t.Fatalf("Confirmation = %+v, want nil", c.Confirmation)
					case tt.wantJKT != "" && (c.Confirmation == nil || c.Confirmation.JKT != tt.wantJKT):
						t.Fatalf("Confirmation = %+v, want jkt %q", c.Confirmation, tt.wantJKT)
					}
					if c.Confirmation != nil {
						c.Confirmation.JKT = "mutated" // must not reach the cache
					}
				}
			}
		})
	}
}
