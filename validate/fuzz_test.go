package validate

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// fuzzSeeds returns valid tokens of every supported family and hostile ones.
func fuzzSeeds(t testing.TB) []string {
	k := keys(t)
	good := claimsJSON(baseClaims())
	body := good[1 : len(good)-1]
	tok := mint(t, k.es256, baseClaims())
	h, p, s := segments(tok)
	return []string{
		tok,
		mint(t, k.rs256, baseClaims()),
		mint(t, k.ed, baseClaims()),
		mint(t, k.es512, baseClaims()),
		forge(t, k.ps256, `{"alg":"PS256","typ":"at+jwt","kid":"ps256"}`, good),
		mint(t, k.es256, with("aud", []string{"a", testAud}, "scope", "a  b")),
		forge(t, k.es256, `{"alg":"none","typ":"at+jwt","kid":"es256"}`, good),
		forge(t, k.rs256, `{"alg":"HS256","typ":"at+jwt","kid":"rs256"}`, good),
		forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt","kid":"es256","jwk":{"kty":"oct","k":"AA"}}`, good),
		forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt","kid":"es256","crit":["b64"],"b64":false}`, good),
		forge(t, k.es256, esHdr, `{`+body+`,"iss":"x"}`),
		forge(t, k.es256, esHdr, `{`+body+`,"exp":1e400}`),
		forge(t, k.es256, esHdr, `{"a":{"b":[1,"\"}"]},`+body+`}`),
		h + "." + p + "." + s + "=",
		h + "." + p,
		h + "." + p + ".." + s,
		`{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`,
		b64enc(`{"alg":"RSA-OAEP","enc":"A256GCM"}`) + ".a.b.c.d",
		"", ".", "..", "a.b.c", strings.Repeat("A", 100) + ".." + strings.Repeat("A", 100),
	}
}

// FuzzValidate checks that Validate never panics, that every error wraps
// exactly one sentinel, and that whatever it accepts go-jose accepts too.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	k := keys(f)
	set := k.primarySet()
	plain := newTestValidator(f, func(c *Config) { c.AllowSCP = true; c.TenantClaim = "tid" })
	withCache := newTestValidator(f, func(c *Config) { c.CacheSize = 64; c.AllowJWTType = true })
	f.Fuzz(func(t *testing.T, raw string) {
		for _, v := range []*Validator{plain, withCache, withCache} {
			c, err := v.Validate(t.Context(), raw)
			if err != nil {
				if c != nil || !wrapsOneSentinel(err) {
					t.Fatalf("Validate(%q): claims %v, err %v does not wrap exactly one sentinel", raw, c, err)
				}
				continue
			}
			agreeWithGoJose(t, raw, set, c)
		}
	})
}

// agreeWithGoJose checks an accepted token with go-jose's jwt package:
// go-jose must parse it, verify its signature under the same key set and
// read the same claims. go-jose v4.1 does not know the RFC 9864 name
// "Ed25519", so for it go-jose parses the token (its allow-list given the
// name) and reads the claims, and crypto/ed25519 checks the signature.
func agreeWithGoJose(t *testing.T, raw string, set *StaticKeys, c *Claims) {
	t.Helper()
	tok, err := jwt.ParseSigned(raw, defaultAlgorithms())
	if err != nil {
		t.Fatalf("accepted %q, go-jose ParseSigned: %v", raw, err)
	}
	var std jwt.Claims
	var all map[string]any
	if tok.Headers[0].Algorithm == string(Ed25519) {
		err = verifyEd25519(raw, set, c.KeyID)
		if err == nil {
			err = tok.UnsafeClaimsWithoutVerification(&std, &all)
		}
	} else {
		err = tok.Claims(&jose.JSONWebKeySet{Keys: set.Set}, &std, &all)
		if err != nil { // go-jose tries the first key of the kid only; try each key of the kid (any, without one)
			for _, k := range set.Set {
				if c.KeyID != "" && k.KeyID != c.KeyID {
					continue
				}
				if err = tok.Claims(k.Key, &std, &all); err == nil {
					break
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("accepted %q, go-jose Claims: %v", raw, err)
	}
	if std.Issuer != c.Issuer || std.Subject != c.Subject || std.ID != c.ID || std.Expiry.Time().Unix() != c.Expiry.Unix() {
		t.Fatalf("go-jose disagrees on %q: got %+v, we got %+v", raw, std, *c)
	}
	if !slicesEqual(std.Audience, c.Audience) {
		t.Fatalf("go-jose disagrees on aud of %q: %q vs %q", raw, std.Audience, c.Audience)
	}
	var ours map[string]any
	if err := c.Decode(&ours); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	a, _ := json.Marshal(all)
	b, _ := json.Marshal(ours)
	if !bytes.Equal(a, b) {
		t.Fatalf("claims differ: go-jose %s, Decode %s", a, b)
	}
}

func slicesEqual(a jwt.Audience, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDifferentialSeeds runs the go-jose cross-check on every accepted seed
// outside fuzzing mode.
func TestDifferentialSeeds(t *testing.T) {
	v := newTestValidator(t, nil)
	set := keys(t).primarySet()
	accepted := 0
	for _, raw := range fuzzSeeds(t) {
		if c, err := v.Validate(t.Context(), raw); err == nil {
			agreeWithGoJose(t, raw, set, c)
			accepted++
		}
	}
	if accepted < 6 {
		t.Errorf("accepted %d seeds, want at least the 6 valid ones", accepted)
	}
}

// FuzzSignedClaims fuzzes the header and claims set of correctly signed
// tokens, so that the fuzzer reaches the claim checks behind the signature.
// Properties as for FuzzValidate.
func FuzzSignedClaims(f *testing.F) {
	good := claimsJSON(baseClaims())
	body := good[1 : len(good)-1]
	for _, s := range [][2]string{
		{`{"alg":"EdDSA","typ":"at+jwt","kid":"ed"}`, good},
		{`{"alg":"EdDSA","typ":"application/at+jwt","kid":"ed","x5t":"a"}`, `{` + body + `,"scp":["a","b"],"tid":"t"}`},
		{`{"alg":"EdDSA","typ":"at+jwt","kid":"ed"}`, `{` + body + `,"ſub":"x"}`},
		{`{"alg":"EdDSA","typ":"at+jwt","kid":"ed"}`, `{"iss":"` + testIss + `","aud":["x","` + testAud + `"],"exp":1767330245.5,"iat":0}`},
		{`{"alg":"EdDSA","kid":"ed","typ":"JWT","cty":"JWT"}`, `{"iss":"` + testIss + `","exp":"1"}`},
	} {
		f.Add(s[0], s[1])
	}
	k := keys(f)
	set := k.primarySet()
	strict := newTestValidator(f, nil)
	lax := newTestValidator(f, func(c *Config) {
		c.AllowSCP, c.TenantClaim, c.AllowJWTType = true, "tid", true
		c.AllowMissingJTI, c.AllowMissingClientID, c.AllowMissingIssuedAt, c.AllowMissingSubject = true, true, true, true
		c.CacheSize = 16
	})
	f.Fuzz(func(t *testing.T, header, payload string) {
		raw := forge(t, k.ed, header, payload)
		for _, v := range []*Validator{strict, lax, lax} {
			c, err := v.Validate(t.Context(), raw)
			if err != nil {
				if c != nil || !wrapsOneSentinel(err) {
					t.Fatalf("Validate: claims %v, err %v does not wrap exactly one sentinel", c, err)
				}
				continue
			}
			agreeWithGoJose(t, raw, set, c)
		}
	})
}

// verifyEd25519 checks the signature of raw with crypto/ed25519 under an
// Ed25519 key of set with kid (any, if kid is empty).
func verifyEd25519(raw string, set *StaticKeys, kid string) error {
	d := strings.LastIndexByte(raw, '.')
	sig, err := base64.RawURLEncoding.DecodeString(raw[d+1:])
	if err != nil {
		return err
	}
	for _, k := range set.Set {
		if pub, ok := k.Key.(ed25519.PublicKey); ok && (kid == "" || k.KeyID == kid) && ed25519.Verify(pub, []byte(raw[:d]), sig) {
			return nil
		}
	}
	return errors.New("no Ed25519 key verifies")
}
