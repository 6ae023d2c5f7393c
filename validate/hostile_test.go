package validate

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// hostile is a token builder for attack cases.
type hostile func(t testing.TB, k *testKeys) string

func forged(h string, c map[string]any) hostile {
	return func(t testing.TB, k *testKeys) string { return forge(t, k.es256, h, claimsJSON(c)) }
}

func forgedRaw(h, payload string) hostile {
	return func(t testing.TB, k *testKeys) string { return forge(t, k.es256, h, payload) }
}

func mutated(f func(tok string) string) hostile {
	return func(t testing.TB, k *testKeys) string { return f(mint(t, k.es256, baseClaims())) }
}

const esHdr = `{"alg":"ES256","typ":"at+jwt","kid":"es256"}`

func TestValidateAlgorithmConfusion(t *testing.T) {
	var cases []vcase
	for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
		cases = append(cases, vcase{name: "alg " + alg,
			tok:     forged(`{"alg":"`+alg+`","typ":"at+jwt","kid":"es256"}`, baseClaims()),
			wantErr: errUnsupportedAlgorithm})
	}
	cases = append(cases,
		vcase{name: "HS256 keyed with the RSA public key", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.rs256, `{"alg":"HS256","typ":"at+jwt","kid":"rs256"}`, claimsJSON(baseClaims()))
		}, wantErr: errUnsupportedAlgorithm},
		vcase{name: "RS256 token under an EC kid", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.rs256, `{"alg":"RS256","typ":"at+jwt","kid":"es256"}`, claimsJSON(baseClaims()))
		}, wantErr: errKeyNotFound},
		vcase{name: "ES256 token under a P-384 kid", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.es384, `{"alg":"ES256","typ":"at+jwt","kid":"es384"}`, claimsJSON(baseClaims()))
		}, wantErr: errKeyNotFound},
		vcase{name: "ES384 token under a P-256 kid", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.es256, `{"alg":"ES384","typ":"at+jwt","kid":"es256"}`, claimsJSON(baseClaims()))
		}, wantErr: errKeyNotFound},
		vcase{name: "EdDSA token under an RSA kid", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.ed, `{"alg":"EdDSA","typ":"at+jwt","kid":"rs256"}`, claimsJSON(baseClaims()))
		}, wantErr: errKeyNotFound},
		vcase{name: "PS256 token under a key whose alg is RS256", tok: func(t testing.TB, k *testKeys) string {
			return forge(t, k.rs256, `{"alg":"PS256","typ":"at+jwt","kid":"rs256"}`, claimsJSON(baseClaims()))
		}, wantErr: errKeyNotFound},
		vcase{name: "PS256 signature, header says RS256", tok: func(t testing.TB, k *testKeys) string {
			good := forge(t, k.ps256, `{"alg":"PS256","typ":"at+jwt","kid":"rs256"}`, claimsJSON(baseClaims()))
			other := forge(t, k.rs256, `{"alg":"RS256","typ":"at+jwt","kid":"rs256"}`, claimsJSON(baseClaims()))
			_, _, sig := segments(good)
			h, p, _ := segments(other)
			return h + "." + p + "." + sig
		}, wantErr: errSignature},
		vcase{name: "RSA 1024 key", tok: func(t testing.TB, k *testKeys) string { return mint(t, k.rs1024, baseClaims()) },
			wantErr: errKeyNotFound},
	)
	runCases(t, cases)
}

func TestValidateForbiddenHeaders(t *testing.T) {
	var cases []vcase
	for name, extra := range map[string]string{
		"jwk":         `"jwk":{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`,
		"jku":         `"jku":"https://evil.example/jwks.json"`,
		"x5u":         `"x5u":"https://evil.example/cert.pem"`,
		"x5c":         `"x5c":["MIIB"]`,
		"crit":        `"crit":["exp"]`,
		"crit empty":  `"crit":[]`,
		"b64 false":   `"b64":false,"crit":["b64"]`,
		"b64 true":    `"b64":true`,
		"cty JWT":     `"cty":"JWT"`,
		"cty jwt":     `"cty":"jwt"`,
		"cty other":   `"cty":"json"`,
		"jwk null":    `"jwk":null`,
		"x5c garbage": `"x5c":"not a chain"`,
	} {
		cases = append(cases, vcase{name: name, tok: forged(`{"alg":"ES256","typ":"at+jwt","kid":"es256",`+extra+`}`, baseClaims()), wantErr: errType})
	}
	cases = append(cases, vcase{name: "nested JWT payload", tok: func(t testing.TB, k *testKeys) string {
		inner := mint(t, k.es256, baseClaims())
		return forge(t, k.es256, `{"alg":"ES256","typ":"at+jwt","kid":"es256","cty":"JWT"}`, `"`+inner+`"`)
	}, wantErr: errType})
	cases = append(cases, vcase{name: "nested JWT payload without cty", tok: func(t testing.TB, k *testKeys) string {
		return forge(t, k.es256, esHdr, mint(t, k.es256, baseClaims()))
	}, wantErr: errMalformed})
	runCases(t, cases)
}

func TestValidateMalformed(t *testing.T) {
	std := func(s string) string { return strings.NewReplacer("-", "+", "_", "/").Replace(s) }
	runCases(t, []vcase{
		{name: "empty", tok: func(testing.TB, *testKeys) string { return "" }, wantErr: errMalformed},
		{name: "one segment", tok: mutated(func(s string) string { h, _, _ := segments(s); return h }), wantErr: errMalformed},
		{name: "two segments", tok: mutated(func(s string) string { h, p, _ := segments(s); return h + "." + p }), wantErr: errMalformed},
		{name: "four segments", tok: mutated(func(s string) string { return s + ".AAAA" }), wantErr: errMalformed},
		{name: "JWE five segments", tok: func(testing.TB, *testKeys) string {
			return b64enc(`{"alg":"RSA-OAEP","enc":"A256GCM","typ":"at+jwt"}`) + ".AAAA.AAAA.AAAA.AAAA"
		}, wantErr: errMalformed},
		{name: "JSON serialization", tok: func(t testing.TB, k *testKeys) string {
			h, p, s := segments(mint(t, k.es256, baseClaims()))
			return `{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`
		}, wantErr: errMalformed},
		{name: "empty header", tok: mutated(func(s string) string { _, p, g := segments(s); return "." + p + "." + g }), wantErr: errMalformed},
		{name: "empty payload", tok: mutated(func(s string) string { h, _, g := segments(s); return h + ".." + g }), wantErr: errMalformed},
		{name: "padding", tok: mutated(func(s string) string { h, p, g := segments(s); return h + "=." + p + "." + g }), wantErr: errMalformed},
		{name: "padded signature", tok: mutated(func(s string) string { return s + "==" }), wantErr: errMalformed},
		{name: "std alphabet", tok: func(t testing.TB, k *testKeys) string {
			for i := 0; ; i++ {
				tok := mint(t, k.es256, with("jti", strings.Repeat("?", i)))
				if strings.ContainsAny(tok, "-_") {
					return std(tok)
				}
			}
		}, wantErr: errMalformed},
		{name: "trailing bits in signature", tok: mutated(func(s string) string {
			// 64 bytes encode to 86 chars; the last char carries 2 unused bits.
			last := s[len(s)-1]
			i := strings.IndexByte(b64alphabet, last)
			return s[:len(s)-1] + string(b64alphabet[i^1])
		}), wantErr: errMalformed},
		{name: "line break", tok: mutated(func(s string) string { return s[:10] + "\n" + s[10:] }), wantErr: errMalformed},
		{name: "CR", tok: mutated(func(s string) string { return s[:10] + "\r" + s[10:] }), wantErr: errMalformed},
		{name: "space", tok: mutated(func(s string) string { return " " + s }), wantErr: errMalformed},
		{name: "Bearer prefix", tok: mutated(func(s string) string { return "Bearer " + s }), wantErr: errMalformed},
		{name: "NUL", tok: mutated(func(s string) string { return s + "\x00" }), wantErr: errMalformed},
		{name: "header not JSON", tok: forgedRaw(`alg=ES256`, claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "header array", tok: forgedRaw(`["ES256"]`, claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "header null", tok: forgedRaw(`null`, claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "header trailing data", tok: forgedRaw(esHdr+`{}`, claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "payload array", tok: forgedRaw(esHdr, `[1,2]`), wantErr: errMalformed},
		{name: "payload string", tok: forgedRaw(esHdr, `"x"`), wantErr: errMalformed},
		{name: "payload truncated", tok: forgedRaw(esHdr, `{"iss":"`+testIss+`"`), wantErr: errMalformed},
		{name: "payload invalid UTF-8", tok: forgedRaw(esHdr, strings.Replace(claimsJSON(baseClaims()), "alice", "al\xffce", 1)), wantErr: errMalformed},
		{name: "payload with BOM", tok: forgedRaw(esHdr, "\ufeff"+claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "33 header parameters", tok: forgedRaw(`{"alg":"ES256","typ":"at+jwt","kid":"es256"`+manyMembers(30)+`}`, claimsJSON(baseClaims())), wantErr: errMalformed},
		{name: "32 header parameters", tok: forgedRaw(`{"alg":"ES256","typ":"at+jwt","kid":"es256"`+manyMembers(29)+`}`, claimsJSON(baseClaims()))},
		{name: "payload whitespace is fine", tok: forgedRaw(esHdr, " \n"+strings.ReplaceAll(claimsJSON(baseClaims()), ",", " ,\t")+"\r\n")},
	})
}

// b64alphabet is the base64url alphabet in value order.
const b64alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestValidateDuplicateMembers(t *testing.T) {
	good := claimsJSON(baseClaims())
	body := good[1 : len(good)-1]
	runCases(t, []vcase{
		{name: "iss twice", tok: forgedRaw(esHdr, `{`+body+`,"iss":"https://evil.example"}`), wantErr: errMalformed},
		{name: "iss twice, same value", tok: forgedRaw(esHdr, `{`+body+`,"iss":"`+testIss+`"}`), wantErr: errMalformed},
		{name: "aud twice", tok: forgedRaw(esHdr, `{"aud":"x",`+body+`}`), wantErr: errMalformed},
		{name: "exp twice", tok: forgedRaw(esHdr, `{`+body+`,"exp":99999999999}`), wantErr: errMalformed},
		{name: "SUB case variant", tok: forgedRaw(esHdr, `{`+body+`,"SUB":"mallory"}`), wantErr: errMalformed},
		{name: "escaped duplicate", tok: forgedRaw(esHdr, `{`+body+`,"\u0073ub":"mallory"}`), wantErr: errMalformed},
		{name: "long s folds to s", tok: forgedRaw(esHdr, `{`+body+`,"ſub":"mallory"}`), wantErr: errMalformed},
		{name: "custom claim case variant", tok: forgedRaw(esHdr, `{`+body+`,"role":"a","ROLE":"b"}`), wantErr: errMalformed},
		{name: "Kelvin sign folds to k", tok: forgedRaw(esHdr, `{`+body+`,"kid":"a","\u212aid":"b"}`), wantErr: errMalformed},
		{name: "custom claim twice", tok: forgedRaw(esHdr, `{`+body+`,"roles":["a"],"roles":["admin"]}`), wantErr: errMalformed},
		{name: "many members, one duplicate", tok: forgedRaw(esHdr, `{`+body+manyMembers(40)+`,"c07":1}`), wantErr: errMalformed},
		{name: "many members, no duplicate", tok: forgedRaw(esHdr, `{`+body+manyMembers(40)+`}`)},
		// Stricter since the move to internal/strictjson: duplicates are
		// refused at every depth (case variants only at the top level).
		{name: "nested duplicate", tok: forgedRaw(esHdr, `{`+body+`,"ext":{"a":1,"a":2}}`), wantErr: errMalformed},
		{name: "nested case variant allowed", tok: forgedRaw(esHdr, `{`+body+`,"ext":{"a":1,"A":2}}`)},
		{name: "invalid UTF-8 in a nested claim", tok: forgedRaw(esHdr, `{`+body+",\"ext\":[\"\xff\"]}"), wantErr: errMalformed},
		{name: "lone surrogate escape", tok: forgedRaw(esHdr, `{`+body+`,"ext":"\ud800"}`), wantErr: errMalformed},
		{name: "alg twice in header", tok: forgedRaw(`{"alg":"ES256","typ":"at+jwt","kid":"es256","alg":"none"}`, good), wantErr: errMalformed},
		{name: "kid twice in header", tok: forgedRaw(`{"alg":"ES256","typ":"at+jwt","kid":"es256","kid":"other"}`, good), wantErr: errMalformed},
		{name: "typ case variant in header", tok: forgedRaw(`{"alg":"ES256","typ":"at+jwt","kid":"es256","TYP":"JWT"}`, good), wantErr: errMalformed},
	})
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`,"c` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":1`)
	}
	return b.String()
}

func TestValidateDegenerateSignatures(t *testing.T) {
	withSigOf := func(k func(*testKeys) *testKey, f func(t testing.TB, sig []byte) []byte) hostile {
		return func(t testing.TB, ks *testKeys) string {
			tok := mint(t, k(ks), baseClaims())
			_, _, s := segments(tok)
			sig, _ := base64.RawURLEncoding.DecodeString(s)
			return withSig(tok, f(t, sig))
		}
	}
	es := func(k *testKeys) *testKey { return k.es256 }
	rs := func(k *testKeys) *testKey { return k.rs256 }
	ed := func(k *testKeys) *testKey { return k.ed }
	zero := func(_ testing.TB, s []byte) []byte { return make([]byte, len(s)) }
	empty := func(testing.TB, []byte) []byte { return nil }
	trunc := func(_ testing.TB, s []byte) []byte { return s[:len(s)-1] }
	flip := func(_ testing.TB, s []byte) []byte { s = bytes.Clone(s); s[len(s)/2] ^= 1; return s }
	long := func(_ testing.TB, s []byte) []byte { return append(bytes.Clone(s), 0) }
	var cases []vcase
	for _, k := range []struct {
		name string
		key  func(*testKeys) *testKey
	}{{"ES256", es}, {"RS256", rs}, {"EdDSA", ed}} {
		for _, m := range []struct {
			name string
			f    func(testing.TB, []byte) []byte
		}{{"empty", empty}, {"all zero", zero}, {"truncated", trunc}, {"bit flipped", flip}, {"extra byte", long}} {
			cases = append(cases, vcase{name: k.name + " " + m.name, tok: withSigOf(k.key, m.f), wantErr: errSignature})
		}
	}
	cases = append(cases,
		vcase{name: "ES256 DER signature", tok: withSigOf(es, derSignature), wantErr: errSignature},
		vcase{name: "ES256 r=0 s=0 in right size", tok: withSigOf(es, zero), wantErr: errSignature},
		vcase{name: "ES256 r=n", tok: withSigOf(es, func(_ testing.TB, s []byte) []byte {
			n := make([]byte, 32)
			copy(n, p256Order)
			return append(n, s[32:]...)
		}), wantErr: errSignature},
		vcase{name: "signature from another token", tok: func(t testing.TB, k *testKeys) string {
			other := mint(t, k.es256, with("sub", "bob"))
			_, _, s := segments(other)
			h, p, _ := segments(mint(t, k.es256, baseClaims()))
			return h + "." + p + "." + s
		}, wantErr: errSignature},
		vcase{name: "payload swapped", tok: func(t testing.TB, k *testKeys) string {
			h, _, s := segments(mint(t, k.es256, baseClaims()))
			return h + "." + b64enc(claimsJSON(with("sub", "admin"))) + "." + s
		}, wantErr: errSignature},
	)
	runCases(t, cases)
}

// p256Order is the order n of P-256, big-endian.
var p256Order = []byte{
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
}

func TestValidateKeySelection(t *testing.T) {
	set := func(keys ...jose.JSONWebKey) func(*Config) {
		return func(c *Config) { c.Issuers[0].Keys = &StaticKeys{Set: keys} }
	}
	k := keys(t)
	pub := k.es256.priv.Public()
	priv := k.es256.priv
	tok := es(baseClaims())
	runCases(t, []vcase{
		{name: "use enc", cfg: set(jose.JSONWebKey{Key: pub, KeyID: "es256", Use: "enc"}), tok: tok, wantErr: errKeyNotFound},
		{name: "use other", cfg: set(jose.JSONWebKey{Key: pub, KeyID: "es256", Use: "tls"}), tok: tok, wantErr: errKeyNotFound},
		{name: "use absent", cfg: set(jose.JSONWebKey{Key: pub, KeyID: "es256"}), tok: tok},
		{name: "key alg differs", cfg: set(jose.JSONWebKey{Key: pub, KeyID: "es256", Algorithm: "ES384"}), tok: tok, wantErr: errKeyNotFound},
		{name: "symmetric key", cfg: set(jose.JSONWebKey{Key: []byte("secret"), KeyID: "es256"}), tok: tok, wantErr: errKeyNotFound},
		{name: "private key", cfg: set(jose.JSONWebKey{Key: priv, KeyID: "es256"}), tok: tok, wantErr: errKeyNotFound},
		{name: "nil key", cfg: set(jose.JSONWebKey{KeyID: "es256"}), tok: tok, wantErr: errKeyNotFound},
		{name: "source returns other kid", cfg: func(c *Config) {
			c.Issuers[0].Keys = fixedKeys{jose.JSONWebKey{Key: pub, KeyID: "other"}}
		}, tok: tok, wantErr: errKeyNotFound},
		{name: "unusable then usable", cfg: set(
			jose.JSONWebKey{Key: pub, KeyID: "es256", Use: "enc"},
			jose.JSONWebKey{Key: k.es256b.priv.Public(), KeyID: "es256"},
			jose.JSONWebKey{Key: pub, KeyID: "es256"},
		), tok: tok},
		{name: "more candidates than tried", cfg: func(c *Config) {
			var ks []jose.JSONWebKey
			for range maxCandidateKeys {
				ks = append(ks, jose.JSONWebKey{Key: k.es256b.priv.Public(), KeyID: "es256"})
			}
			set(append(ks, jose.JSONWebKey{Key: pub, KeyID: "es256"})...)(c)
		}, tok: tok, wantErr: errKeyNotFound},
		{name: "as many candidates as tried", cfg: func(c *Config) {
			var ks []jose.JSONWebKey
			for range maxCandidateKeys - 1 {
				ks = append(ks, jose.JSONWebKey{Key: k.es256b.priv.Public(), KeyID: "es256"})
			}
			set(append(ks, jose.JSONWebKey{Key: pub, KeyID: "es256"})...)(c)
		}, tok: tok},
		{name: "many keys, few fit", cfg: func(c *Config) {
			var ks []jose.JSONWebKey
			for range maxCandidateKeys {
				ks = append(ks, jose.JSONWebKey{Key: k.es256b.priv.Public(), KeyID: "es256", Use: "enc"})
			}
			set(append(ks, jose.JSONWebKey{Key: pub, KeyID: "es256"})...)(c)
		}, tok: tok},
	})
}
