package validate

import (
	"errors"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

func TestValidateTimes(t *testing.T) {
	leeway := func(d time.Duration) func(*Config) { return func(c *Config) { c.Leeway = d } }
	runCases(t, []vcase{
		// exp: expired when exp <= now - leeway (default 30s).
		{name: "exp now-29s within default leeway", tok: es(with("exp", at(-29*time.Second), "iat", at(-time.Hour)))},
		{name: "exp now-30s at default leeway", tok: es(with("exp", at(-30*time.Second), "iat", at(-time.Hour))), wantErr: errExpired},
		{name: "exp now-31s", tok: es(with("exp", at(-31*time.Second), "iat", at(-time.Hour))), wantErr: errExpired},
		{name: "exp now+1s, no leeway", cfg: leeway(-1), tok: es(with("exp", at(time.Second)))},
		{name: "exp now, no leeway", cfg: leeway(-1), tok: es(with("exp", at(0))), wantErr: errExpired},
		{name: "exp now-4s, leeway 5s", cfg: leeway(5 * time.Second), tok: es(with("exp", at(-4*time.Second)))},
		{name: "exp now-5s, leeway 5s", cfg: leeway(5 * time.Second), tok: es(with("exp", at(-5*time.Second))), wantErr: errExpired},
		// nbf: not yet valid when nbf > now + leeway.
		{name: "nbf now+30s at default leeway", tok: es(with("nbf", at(30*time.Second)))},
		{name: "nbf now+31s", tok: es(with("nbf", at(31*time.Second))), wantErr: errNotYetValid},
		{name: "nbf now+1s, no leeway", cfg: leeway(-1), tok: es(with("nbf", at(time.Second))), wantErr: errNotYetValid},
		{name: "nbf now, no leeway", cfg: leeway(-1), tok: es(with("nbf", at(0)))},
		// iat: issued in the future when iat > now + leeway.
		{name: "iat now+30s at default leeway", tok: es(with("iat", at(30*time.Second)))},
		{name: "iat now+31s", tok: es(with("iat", at(31*time.Second))), wantErr: errIssuedAt},
		{name: "iat now+1s, no leeway", cfg: leeway(-1), tok: es(with("iat", at(time.Second))), wantErr: errIssuedAt},
		// Lifetime: exp - iat <= MaxTokenLifetime.
		{name: "lifetime at max", cfg: func(c *Config) { c.MaxTokenLifetime = time.Hour },
			tok: es(with("iat", at(-time.Minute), "exp", at(time.Hour-time.Minute)))},
		{name: "lifetime max+1s", cfg: func(c *Config) { c.MaxTokenLifetime = time.Hour },
			tok: es(with("iat", at(-time.Minute), "exp", at(time.Hour-time.Minute+time.Second))), wantErr: errLifetime},
		{name: "long lifetime unchecked by default", tok: es(with("exp", at(24*365*time.Hour)))},
		// Types and ranges.
		{name: "exp string", tok: es(with("exp", "1767330245")), wantErr: errMalformed},
		{name: "exp bool", tok: es(with("exp", true)), wantErr: errMalformed},
		{name: "exp null", tok: es(with("exp", jsonNull{})), wantErr: errMalformed},
		{name: "exp array", tok: es(with("exp", []int64{at(time.Hour)})), wantErr: errMalformed},
		{name: "exp negative", tok: es(with("exp", -1)), wantErr: errMalformed},
		{name: "exp after year 9999", tok: es(with("exp", int64(jwtclaims.MaxNumericDate)+1)), wantErr: errMalformed},
		{name: "exp 1e20", tok: es(with("exp", 1e20)), wantErr: errMalformed},
		{name: "exp beyond int64", tok: es(with("exp", 1e19)), wantErr: errMalformed},
		{name: "nbf string", tok: es(with("nbf", "0")), wantErr: errMalformed},
		{name: "iat negative", tok: es(with("iat", -5)), wantErr: errMalformed},
		{name: "iat zero is 1970", tok: es(with("iat", 0))},
	})
}

func TestValidateForgedTimes(t *testing.T) {
	// Values encoding/json would not produce.
	for _, tc := range []struct {
		name, exp string
		wantErr   error
	}{
		{"1e400 overflows float64", "1e400", errMalformed},
		{"-1e400", "-1e400", errMalformed},
		{"NaN is not JSON", "NaN", errMalformed},
		{"Infinity is not JSON", "Infinity", errMalformed},
		{"negative zero", "-0", errExpired},
		{"exponent form", "1.7673302450e9", nil},
		{"huge integer text", "99999999999999999999999999999999999999", errMalformed},
		{"leading plus", "+1767330245", errMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := keys(t)
			payload := `{"iss":"` + testIss + `","sub":"a","aud":"` + testAud + `","iat":1767322000,"client_id":"c","jti":"j","exp":` + tc.exp + `}`
			_, err := newTestValidator(t, nil).Validate(t.Context(), forge(t, k.es256, hdr(k.es256), payload))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestValidateScopeAndTenant(t *testing.T) {
	scp := func(c *Config) { c.AllowSCP = true }
	scopes := func(want ...string) func(*testing.T, *Claims) {
		return func(t *testing.T, c *Claims) {
			t.Helper()
			if !slices.Equal(c.Scopes, want) {
				t.Errorf("Scopes: got %q, want %q", c.Scopes, want)
			}
			for _, s := range want {
				if !c.HasScope(s) {
					t.Errorf("HasScope(%q): got false", s)
				}
			}
			if c.HasScope("") || c.HasScope("admin") {
				t.Errorf("HasScope: got true for an ungranted scope")
			}
		}
	}
	tenant := func(c *Config) { c.TenantClaim = "tid" }
	runCases(t, []vcase{
		{name: "scope split", tok: es(with("scope", "a b  c")), check: scopes("a", "b", "c")},
		{name: "scope empty", tok: es(with("scope", "")), check: scopes()},
		{name: "scope array refused", tok: es(with("scope", []string{"a"})), wantErr: errMalformed},
		{name: "scope number", tok: es(with("scope", 1)), wantErr: errMalformed},
		{name: "scope with tab", tok: es(with("scope", "a\tb")), wantErr: errMalformed},
		{name: "scope with quote", tok: es(with("scope", `a"b`)), wantErr: errMalformed},
		{name: "scope non-ASCII", tok: es(with("scope", "café")), wantErr: errMalformed},
		{name: "scp ignored by default", tok: es(with("scope", nil, "scp", "a b")), check: scopes()},
		{name: "scp bad type ignored by default", tok: es(with("scope", nil, "scp", 5)), check: scopes()},
		{name: "scp string", cfg: scp, tok: es(with("scope", nil, "scp", "a b")), check: scopes("a", "b")},
		{name: "scp array", cfg: scp, tok: es(with("scope", nil, "scp", []string{"a", "b"})), check: scopes("a", "b")},
		{name: "scp empty array", cfg: scp, tok: es(with("scope", nil, "scp", []string{})), check: scopes()},
		{name: "scope wins over scp", cfg: scp, tok: es(with("scope", "a", "scp", []string{"b"})), check: scopes("a")},
		{name: "scp number", cfg: scp, tok: es(with("scope", nil, "scp", 5)), wantErr: errMalformed},
		{name: "scp array with number", cfg: scp, tok: es(with("scope", nil, "scp", []any{"a", 1})), wantErr: errMalformed},
		{name: "scp array element with space", cfg: scp, tok: es(with("scope", nil, "scp", []string{"a b"})), wantErr: errMalformed},
		{name: "scp array empty element", cfg: scp, tok: es(with("scope", nil, "scp", []string{""})), wantErr: errMalformed},
		{name: "tenant string", cfg: tenant, tok: es(with("tid", "t-1")), check: func(t *testing.T, c *Claims) {
			if c.Tenant != "t-1" {
				t.Errorf("Tenant: got %q, want t-1", c.Tenant)
			}
		}},
		{name: "tenant absent", cfg: tenant, tok: es(baseClaims()), check: func(t *testing.T, c *Claims) {
			if c.Tenant != "" {
				t.Errorf("Tenant: got %q, want empty", c.Tenant)
			}
		}},
		{name: "tenant number", cfg: tenant, tok: es(with("tid", 7)), wantErr: errMalformed},
		{name: "tenant object", cfg: tenant, tok: es(with("tid", map[string]string{"id": "t"})), wantErr: errMalformed},
		{name: "tenant not read by default", tok: es(with("tid", 7)), check: func(t *testing.T, c *Claims) {
			if c.Tenant != "" {
				t.Errorf("Tenant: got %q, want empty", c.Tenant)
			}
		}},
		{name: "tenant claim may be a registered claim", cfg: func(c *Config) { c.TenantClaim = "sub" },
			tok: es(baseClaims()), check: func(t *testing.T, c *Claims) {
				if c.Tenant != "alice" || c.Subject != "alice" {
					t.Errorf("Tenant, Subject: got %q, %q", c.Tenant, c.Subject)
				}
			}},
	})
}

func TestValidateHeader(t *testing.T) {
	typ := func(typ string) func(testing.TB, *testKeys) string {
		return func(t testing.TB, k *testKeys) string { return mintTyp(t, k.es256, baseClaims(), typ) }
	}
	jwtType := func(c *Config) { c.AllowJWTType = true }
	onlyES := func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{jose.ES256} }
	raw := func(h string) func(testing.TB, *testKeys) string {
		return func(t testing.TB, k *testKeys) string { return forge(t, k.es256, h, claimsJSON(baseClaims())) }
	}
	runCases(t, []vcase{
		{name: "typ application/at+jwt", tok: typ("application/at+jwt")},
		{name: "typ AT+JWT", tok: typ("AT+JWT")},
		{name: "typ Application/At+Jwt", tok: typ("Application/At+Jwt")},
		{name: "typ JWT refused", tok: typ("JWT"), wantErr: errType},
		{name: "typ absent refused", tok: typ(""), wantErr: errType},
		{name: "typ empty refused", tok: raw(`{"alg":"ES256","typ":"","kid":"es256"}`), wantErr: errType},
		{name: "typ at+jwt with space", tok: typ("at+jwt "), wantErr: errType},
		{name: "typ application/ alone", tok: typ("application/"), wantErr: errType},
		{name: "typ x-application/at+jwt", tok: typ("x-application/at+jwt"), wantErr: errType},
		{name: "typ id_token+jwt", tok: typ("id_token+jwt"), wantErr: errType},
		{name: "typ number", tok: raw(`{"alg":"ES256","typ":1,"kid":"es256"}`), wantErr: errMalformed},
		{name: "AllowJWTType JWT", cfg: jwtType, tok: typ("JWT")},
		{name: "AllowJWTType application/jwt", cfg: jwtType, tok: typ("application/jwt")},
		{name: "AllowJWTType absent", cfg: jwtType, tok: typ("")},
		{name: "AllowJWTType at+jwt", cfg: jwtType, tok: typ("at+jwt")},
		{name: "AllowJWTType still refuses others", cfg: jwtType, tok: typ("dpop+jwt"), wantErr: errType},
		{name: "alg outside allow-list", cfg: onlyES, tok: func(t testing.TB, k *testKeys) string { return mint(t, k.rs256, baseClaims()) },
			wantErr: errUnsupportedAlgorithm},
		{name: "alg in allow-list", cfg: onlyES, tok: es(baseClaims())},
		{name: "missing alg", tok: raw(`{"typ":"at+jwt","kid":"es256"}`), wantErr: errMalformed},
		{name: "alg number", tok: raw(`{"alg":256,"typ":"at+jwt","kid":"es256"}`), wantErr: errMalformed},
		{name: "missing kid", tok: raw(`{"alg":"ES256","typ":"at+jwt"}`)},
		{name: "empty kid", tok: raw(`{"alg":"ES256","typ":"at+jwt","kid":""}`)},
		{name: "RequireKID missing kid", cfg: func(c *Config) { c.RequireKID = true }, tok: raw(`{"alg":"ES256","typ":"at+jwt"}`), wantErr: errKeyNotFound},
		{name: "RequireKID empty kid", cfg: func(c *Config) { c.RequireKID = true }, tok: raw(`{"alg":"ES256","typ":"at+jwt","kid":""}`), wantErr: errKeyNotFound},
		{name: "kid number", tok: raw(`{"alg":"ES256","typ":"at+jwt","kid":1}`), wantErr: errMalformed},
		{name: "unknown kid", tok: raw(`{"alg":"ES256","typ":"at+jwt","kid":"nope"}`), wantErr: errKeyNotFound},
		{name: "no kid: KeyID empty", tok: raw(`{"alg":"ES256","typ":"at+jwt"}`),
			check: func(t *testing.T, c *Claims) {
				if c.KeyID != "" {
					t.Errorf("KeyID: got %q, want empty", c.KeyID)
				}
			}},
		{name: "unknown header ignored", tok: raw(`{"alg":"ES256","typ":"at+jwt","kid":"es256","x5t#S256":"abc","foo":{"a":[1]}}`)},
		{name: "escaped header names", tok: raw(`{"\u0061lg":"ES256","typ":"at\u002bjwt","kid":"es256"}`)},
	})
}

func TestValidateSize(t *testing.T) {
	k := keys(t)
	big := with("pad", strings.Repeat("x", 9000))
	tok := mint(t, k.es256, baseClaims())
	tests := []struct {
		name    string
		max     int
		tok     string
		wantErr error
	}{
		{"default limit", 0, mint(t, k.es256, big), errTooLarge},
		{"raised limit", 64 << 10, mint(t, k.es256, big), nil},
		{"exactly at limit", len(tok), tok, nil},
		{"one byte over", len(tok) - 1, tok, errTooLarge},
		{"over limit and garbage", 10, "!!!!!!!!!!!", errTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestValidator(t, func(c *Config) { c.MaxTokenBytes = tt.max })
			if _, err := v.Validate(t.Context(), tt.tok); !errors.Is(err, tt.wantErr) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestCanonicalURI(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", true},
		{"HTTPS://MCP.Example.COM/MCP", "https://mcp.example.com/MCP", true},
		{"https://H.example:8443?Q#F", "https://h.example:8443?Q#F", true},
		{"https://mcp.\u212Aiwi.example/mcp", "", false}, // Kelvin sign: never "k"
		{"https://\u00C5.example/mcp", "", false},
		{"https://u@h.example/mcp", "", false},
		{"mcp.example.com/mcp", "", false},
		{"://h/p", "", false},
	}
	for _, tt := range tests {
		got, ok := jwtclaims.CanonicalURI(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("jwtclaims.CanonicalURI(%q) = %q, %t; want %q, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
