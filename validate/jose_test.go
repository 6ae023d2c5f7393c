package validate

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// goJoseAccepts reports whether go-jose's jwt package parses raw (with
// this package's default allow-list) and verifies it under set.
func goJoseAccepts(raw string, set *StaticKeys) bool {
	tok, err := jwt.ParseSigned(raw, defaultAlgorithms())
	if err != nil {
		return false
	}
	var all map[string]any
	if tok.Claims(&jose.JSONWebKeySet{Keys: set.Set}, &all) == nil {
		return true
	}
	if tok.Headers[0].KeyID != "" {
		return false
	}
	for _, k := range set.Set { // go-jose selects only by kid; without one, try each key
		if tok.Claims(k.Key, &all) == nil {
			return true
		}
	}
	return false
}

// TestJOSEBoundaryDifferential runs one token of every hostile class of the
// JOSE boundary (jws.go) through Validate and through go-jose, both ways:
// every token Validate accepts, go-jose accepts with the same claims; and
// every token go-jose refuses, Validate refuses. Validate refuses some
// tokens go-jose accepts (it is stricter: typ, crit, kid, duplicates,
// case variants); the table says which.
func TestJOSEBoundaryDifferential(t *testing.T) {
	k := keys(t)
	good := claimsJSON(baseClaims())
	body := good[1 : len(good)-1]
	// A token whose signature needs '-' or '_' in base64url, so that its
	// standard-alphabet spelling below really differs (an ECDSA signature
	// has none in about 6 % of tokens).
	valid := mint(t, k.es256, baseClaims())
	for !strings.ContainsAny(valid[strings.LastIndexByte(valid, '.'):], "-_") {
		valid = mint(t, k.es256, baseClaims())
	}
	h, p, s := segments(valid)
	sig, _ := base64.RawURLEncoding.DecodeString(s)
	es := func(hdr, payload string) string { return forge(t, k.es256, hdr, payload) }
	tests := []struct {
		name    string
		tok     string
		wantErr error // nil: accepted by both
	}{
		{"valid ES256", valid, nil},
		{"valid RS256", mint(t, k.rs256, baseClaims()), nil},
		{"valid EdDSA", mint(t, k.ed, baseClaims()), nil},
		{"valid PS256", forge(t, k.ps256, `{"alg":"PS256","typ":"at+jwt","kid":"ps256"}`, good), nil},
		// Serialization and base64url.
		{"two segments", h + "." + p, errMalformed},
		{"four segments", valid + ".x", errMalformed},
		{"JWE five segments", b64enc(`{"alg":"RSA-OAEP","enc":"A256GCM"}`) + ".a.b.c.d", errMalformed},
		{"JSON serialization", `{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`, errMalformed},
		{"padded signature", withSig(valid, sig) + "==", errMalformed},
		{"standard alphabet", h + "." + p + "." + base64.RawStdEncoding.EncodeToString(sig), errMalformed},
		{"line break in payload", h + "." + p[:10] + "\n" + p[10:] + "." + s, errMalformed},
		{"empty payload segment", h + ".." + s, errMalformed},
		{"non-canonical trailing bits", h + "." + p + "." + s[:len(s)-1] + string(s[len(s)-1]^1), errMalformed},
		// Header JSON.
		{"header not an object", es(`["ES256"]`, good), errMalformed},
		{"header trailing data", es(esHdr+`{}`, good), errMalformed},
		{"header invalid UTF-8", es("{\"alg\":\"ES256\",\"typ\":\"at+jwt\",\"kid\":\"es256\",\"x\":\"\xff\"}", good), errMalformed},
		{"header duplicate alg", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","alg":"ES256"}`, good), errMalformed},
		{"header case variant", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","ALG":"none"}`, good), errMalformed},
		{"kid not a string", es(`{"alg":"ES256","typ":"at+jwt","kid":7}`, good), errMalformed},
		// alg.
		{"alg none", es(`{"alg":"none","typ":"at+jwt","kid":"es256"}`, good), errUnsupportedAlgorithm},
		{"alg HS256 (key confusion)", forge(t, k.rs256, `{"alg":"HS256","typ":"at+jwt","kid":"rs256"}`, good), errUnsupportedAlgorithm},
		{"alg lower case", es(`{"alg":"es256","typ":"at+jwt","kid":"es256"}`, good), errUnsupportedAlgorithm},
		{"alg missing", es(`{"typ":"at+jwt","kid":"es256"}`, good), errMalformed},
		{"alg of another family", es(`{"alg":"RS256","typ":"at+jwt","kid":"es256"}`, good), errKeyNotFound},
		// Parameters that choose keys or processing.
		{"jwk embedded", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","jwk":{"kty":"EC"}}`, good), errType},
		{"jku", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","jku":"https://evil.example/jwks"}`, good), errType},
		{"x5u", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","x5u":"https://evil.example/c"}`, good), errType},
		{"x5c", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","x5c":["MIIB"]}`, good), errType},
		{"crit", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","crit":["exp"],"exp":1}`, good), errType},
		{"b64 false", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","crit":["b64"],"b64":false}`, good), errType},
		{"cty JWT (nested)", es(`{"alg":"ES256","typ":"at+jwt","kid":"es256","cty":"JWT"}`, good), errType},
		{"typ JWT", es(`{"alg":"ES256","typ":"JWT","kid":"es256"}`, good), errType},
		{"typ missing", es(`{"alg":"ES256","kid":"es256"}`, good), errType},
		{"kid missing", es(`{"alg":"ES256","typ":"at+jwt"}`, good), nil},
		{"kid unknown", es(`{"alg":"ES256","typ":"at+jwt","kid":"nope"}`, good), errKeyNotFound},
		// Claims set JSON.
		{"claims not an object", es(esHdr, `[1]`), errMalformed},
		{"claims duplicate iss", es(esHdr, `{`+body+`,"iss":"https://evil.example"}`), errMalformed},
		{"claims case variant sub", es(esHdr, `{`+body+`,"SUB":"mallory"}`), errMalformed},
		{"claims nested duplicate", es(esHdr, `{`+body+`,"x":{"a":1,"a":2}}`), errMalformed},
		{"claims invalid UTF-8", es(esHdr, `{`+body+",\"x\":\"\xc3\"}"), errMalformed},
		{"claims lone surrogate", es(esHdr, `{`+body+`,"x":"\ud800"}`), errMalformed},
		{"claims trailing data", es(esHdr, good+` 1`), errMalformed},
		// Signatures.
		{"ECDSA DER signature", withSig(valid, derSignature(t, sig)), errSignature},
		{"truncated signature", withSig(valid, sig[:63]), errSignature},
		{"signature of another token", h + "." + b64enc(`{`+body+`,"x":1}`) + "." + s, errSignature},
		{"RSA 1024-bit key", forge(t, k.rs1024, `{"alg":"RS256","typ":"at+jwt","kid":"rs1024"}`, good), errKeyNotFound},
		{"Ed25519 alg on an EC key id", es(`{"alg":"Ed25519","typ":"at+jwt","kid":"es256"}`, good), errKeyNotFound},
	}
	set := k.primarySet()
	v := newTestValidator(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Validate(t.Context(), tt.tok)
			jose := goJoseAccepts(tt.tok, set)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Validate: %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				agreeWithGoJose(t, tt.tok, set, c) // we accept => go-jose accepts, same claims
			}
			if !jose && err == nil {
				t.Fatalf("go-jose refuses, Validate accepts") // go-jose refuses => we refuse
			}
			t.Logf("go-jose accepts: %t; Validate: %v", jose, err)
		})
	}
}

// TestEd25519Name: RFC 9864's fully specified "Ed25519" verifies as EdDSA
// does, with the same key checks, in the allow-list and in JWK "alg".
func TestEd25519Name(t *testing.T) {
	k := keys(t)
	good := claimsJSON(baseClaims())
	edTok := forge(t, k.ed, `{"alg":"Ed25519","typ":"at+jwt","kid":"ed"}`, good)
	withKeyAlg := func(alg string) func(*Config) {
		return func(c *Config) {
			jk := k.ed.jwk()
			jk.Algorithm = alg
			c.Issuers[0].Keys = &StaticKeys{Set: []jose.JSONWebKey{jk, k.es256.jwk()}}
		}
	}
	tests := []struct {
		name    string
		tok     string
		cfg     func(*Config)
		wantErr error
	}{
		{"Ed25519 token, JWK alg EdDSA", edTok, withKeyAlg("EdDSA"), nil},
		{"Ed25519 token, JWK alg Ed25519", edTok, withKeyAlg("Ed25519"), nil},
		{"Ed25519 token, JWK without alg", edTok, withKeyAlg(""), nil},
		{"EdDSA token, JWK alg Ed25519", mint(t, k.ed, baseClaims()), withKeyAlg("Ed25519"), nil},
		{"Ed25519 token, JWK alg ES256", edTok, withKeyAlg("ES256"), errKeyNotFound},
		{"Ed25519 not in the configured list", edTok, func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{jose.EdDSA} }, errUnsupportedAlgorithm},
		{"Ed25519 alone configured", edTok, func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{Ed25519} }, nil},
		{"EdDSA refused when only Ed25519 configured", mint(t, k.ed, baseClaims()), func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{Ed25519} }, errUnsupportedAlgorithm},
		{"Ed25519 case variant", forge(t, k.ed, `{"alg":"ED25519","typ":"at+jwt","kid":"ed"}`, good), nil, errUnsupportedAlgorithm},
		{"Ed25519 signature with a bad length", withSig(edTok, make([]byte, 63)), nil, errSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestValidator(t, tt.cfg)
			c, err := v.Validate(t.Context(), tt.tok)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Validate: %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				agreeWithGoJose(t, tt.tok, v.cfg.Issuers[0].Keys.(*StaticKeys), c)
			}
		})
	}
	// The signature really is checked, by crypto/ed25519.
	h, p, _ := segments(edTok)
	bad := ed25519.Sign(k.ed.priv.(ed25519.PrivateKey), []byte(h+"."+p+"x"))
	if _, err := newTestValidator(t, nil).Validate(t.Context(), h+"."+p+"."+base64.RawURLEncoding.EncodeToString(bad)); !errors.Is(err, errSignature) {
		t.Fatalf("wrong Ed25519 signature: %v", err)
	}
}

// TestCacheSameSignatureSegment: the cache is keyed by the end of the
// signature segment, but a hit needs the whole token: a token that reuses a cached
// token's signature over another payload is verified in full, fails, and
// does not evict the valid entry.
func TestCacheSameSignatureSegment(t *testing.T) {
	k := keys(t)
	v := newTestValidator(t, func(c *Config) { c.CacheSize = 16 })
	tok := mint(t, k.es256, baseClaims())
	if _, err := v.Validate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	h, _, s := segments(tok)
	forged := h + "." + b64enc(claimsJSON(with("sub", "mallory"))) + "." + s
	for range 2 {
		if c, err := v.Validate(t.Context(), forged); !errors.Is(err, errSignature) {
			t.Fatalf("forged: %+v, %v", c, err)
		}
	}
	if c, err := v.Validate(t.Context(), tok); err != nil || c.Subject != "alice" || v.cache.len() != 1 {
		t.Fatalf("valid after forged: %+v, %v, %d entries", c, err, v.cache.len())
	}
}

// TestCloneSharesNothing: the copies a cache hit returns share no memory
// with the cache or with each other, although Audience and Scopes share
// one allocation.
func TestCloneSharesNothing(t *testing.T) {
	k := keys(t)
	v := newTestValidator(t, func(c *Config) { c.CacheSize = 16 })
	tok := mint(t, k.es256, with("aud", []string{testAud, "b"}))
	for range 3 {
		c, err := v.Validate(t.Context(), tok)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Audience) != 2 || c.Audience[0] != testAud || len(c.Scopes) != 2 || c.Scopes[0] != "tools:read" {
			t.Fatalf("claims = %+v", c)
		}
		c.Audience = append(c.Audience, "x") // must not overwrite Scopes
		c.Audience[0], c.Scopes[0] = "mutated", "mutated"
		if c.Scopes[1] != "tools:call" {
			t.Fatalf("append to Audience wrote into Scopes: %q", c.Scopes)
		}
	}
}
