package integration

import (
	"bytes"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// hxCase is one hostile request against the example server.
type hxCase struct {
	class, name string
	// req builds the request at run time (after the clock has moved), so
	// that time-relative tokens are exact. Its note text defaults to
	// "class/name".
	req  func(t *testing.T) hxReq
	want hxWant
	// wantErr, if set, is the validate sentinel the token itself must
	// fail with when given straight to the validator after the request,
	// so that a case cannot pass for the wrong reason (the middleware
	// maps every token failure to the same 401).
	wantErr error
	// fetches is the exact number of JWKS fetches the request must cause:
	// 1 when the token reaches the key source with an unknown kid (one
	// on-demand refresh) or with a known kid whose signature fails (one
	// Refresh, for authorization servers that re-key under an unchanged
	// kid); 0 when it is refused before key selection.
	fetches int64
}

// Keys the hostile suite publishes in the issuer's JWKS before the key
// source's first fetch, besides the issuer's own (authtest.KIDES256, …).
const (
	hxKIDES256   = "hx-es256"     // ES256, "alg":"ES256": signs hand-assembled tokens
	hxKIDRS256   = "hx-rs256"     // RSA 2048, "alg":"RS256"
	hxKIDRSANone = "hx-rsa-noalg" // the same RSA key without "alg"
	hxKIDEnc     = "hx-enc"       // ES256 with "use":"enc": must be dropped
	hxKIDWeak    = "hx-rsa1024"   // RSA 1024: must be dropped
	hxKIDDup     = "hx-dup"       // two ES256 keys share this kid
)

// TestHostileTokens sends more than a hundred hostile tokens and requests,
// grouped by attack class (RFC 6750, RFC 7515/7519, RFC 8725, RFC 9068,
// RFC 9728), over real HTTP to the example MCP server, which validates
// with validate.Validator and a validate/jwks key source pointed at an
// authtest issuer. Every case asserts the exact status, WWW-Authenticate,
// body and Cache-Control; that a refused request had none of its body
// read (the middleware stops before the MCP handler); the exact number of
// JWKS fetches; and that no other outbound request was made (metadata,
// introspection, and an attacker's server named in jku/x5u). Each case
// calls notes_write with its name as the text, so at the end the notes
// store must hold exactly the names of the accepted cases: any refused
// case whose tool call ran would show up there.
func TestHostileTokens(t *testing.T) {
	t.Parallel()
	const rateLimit = 10 * time.Second
	att := newHxAttacker(t)

	esKey := authtest.GenerateKey(jose.ES256, hxKIDES256)
	rsKey := authtest.GenerateKey(jose.RS256, hxKIDRS256)
	rsNoAlg := jose.JSONWebKey{Key: &rsKey.Key.(*rsa.PrivateKey).PublicKey, KeyID: hxKIDRSANone, Use: "sig"}
	encKey := authtest.GenerateKey(jose.ES256, hxKIDEnc)
	encKey.Use = "enc"
	weakKey := authtest.GenerateRSAKey(1024, hxKIDWeak)
	dup1 := authtest.GenerateKey(jose.ES256, hxKIDDup)
	dup2 := authtest.GenerateKey(jose.ES256, hxKIDDup)
	foreignDup := authtest.GenerateKey(jose.ES256, hxKIDDup) // never published

	e := newHxEnv(t, hxEnvConfig{
		JWKS: jwks.Config{RefreshRateLimit: rateLimit},
		BeforeStart: func(iss *authtest.Issuer) {
			// Public halves only: a private key added to the issuer would
			// become the key authtest.WithAlgorithm picks.
			for _, k := range []jose.JSONWebKey{esKey.Public(), rsKey.Public(), rsNoAlg, encKey.Public(), weakKey.Public(), dup1.Public(), dup2.Public()} {
				iss.AddKey(k)
			}
		},
	})
	ctx := hxContext(t, 50*time.Second)

	es := hxSigner{esKey}
	rs := hxSigner{rsKey}
	attacker := hxSigner{att.key}

	// hdr is the header of a hand-assembled token: a valid at+jwt ES256
	// header under hx-es256, with extra members set (nil deletes).
	hdr := func(extra map[string]any) map[string]any {
		h := map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": hxKIDES256}
		for k, v := range extra {
			if v == nil {
				delete(h, k)
			} else {
				h[k] = v
			}
		}
		return h
	}
	// claims returns valid claims with changes applied (nil deletes).
	claims := func(changes map[string]any) map[string]any {
		c := e.claims()
		for k, v := range changes {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	// signed signs header and claims (any JSON values) with signer.
	signed := func(t *testing.T, s hxSigner, alg string, header, payload any) string {
		raw := func(v any) []byte {
			if b, ok := v.([]byte); ok {
				return b
			}
			return hxJSON(t, v)
		}
		return s.sign(t, alg, raw(header), raw(payload))
	}
	bearer := func(tok string) hxReq { return hxReq{authz: hxBearer(tok)} }
	tokReq := func(opts ...authtest.TokenOption) func(t *testing.T) hxReq {
		return func(t *testing.T) hxReq { return bearer(e.tok(t, opts...)) }
	}
	// validPayload returns the JSON of valid claims with extra raw members
	// inserted before the closing brace (for duplicate member names).
	validPayload := func(extra string) []byte {
		b, _ := json.Marshal(e.claims())
		return append(b[:len(b)-1], []byte(extra+"}")...)
	}
	now := func() int64 { return e.iss.Now().Unix() }
	leeway := int64(validate.DefaultLeeway / time.Second)
	uniqueSub := func(t *testing.T) authtest.TokenOption { return authtest.WithSubject("hx-" + t.Name()) }

	ok, invalid, noTok := e.wantOK(), e.wantInvalidToken(), e.wantNoToken()
	malformed, multiple, inQuery := e.wantInvalidRequest(hxDescMalformed), e.wantInvalidRequest(hxDescMultiple), e.wantInvalidRequest(hxDescQuery)
	insufficient := e.wantInsufficient(hxBaseScope, server.ScopeNotesWrite)
	expired := func(t *testing.T) string { return e.tok(t, authtest.Expired()) }

	cases := []hxCase{
		// --- extraction: RFC 6750 §2.1 header only; §2.2 body and §2.3
		// query are not bearer methods of this server.
		{class: "extraction", name: "no_authorization", want: noTok,
			req: func(t *testing.T) hxReq { return hxReq{} }},
		{class: "extraction", name: "scheme_lowercase_bearer", want: ok,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"bearer " + e.tok(t)}} }},
		{class: "extraction", name: "scheme_uppercase_BEARER", want: ok,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"BEARER " + e.tok(t)}} }},
		{class: "extraction", name: "scheme_basic", want: noTok,
			req: func(t *testing.T) hxReq {
				return hxReq{authz: []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+e.tok(t)))}}
			}},
		{class: "extraction", name: "scheme_dpop", want: noTok,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"DPoP " + e.tok(t)}} }},
		{class: "extraction", name: "empty_header_value", want: noTok,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{""}} }},
		{class: "extraction", name: "bearer_without_token", want: malformed,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer"}} }},
		{class: "extraction", name: "two_spaces", want: ok,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer  " + e.tok(t)}} }},
		{class: "extraction", name: "tab_separator", want: malformed,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer\t" + e.tok(t)}} }},
		{class: "extraction", name: "trailing_junk", want: malformed,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer " + e.tok(t) + " junk"}} }},
		{class: "extraction", name: "trailing_comma_param", want: malformed,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer " + e.tok(t) + ", realm=x"}} }},
		{class: "extraction", name: "two_authorization_lines", want: multiple,
			req: func(t *testing.T) hxReq { return hxReq{authz: []string{"Bearer " + e.tok(t), "Bearer " + e.tok(t)}} }},
		{class: "extraction", name: "query_access_token_alone", want: inQuery,
			req: func(t *testing.T) hxReq { return hxReq{query: "access_token=" + e.tok(t)} }},
		{class: "extraction", name: "query_access_token_with_header", want: inQuery,
			req: func(t *testing.T) hxReq { return hxReq{authz: hxBearer(e.tok(t)), query: "access_token=" + e.tok(t)} }},
		{class: "extraction", name: "query_access_token_percent_encoded_name", want: inQuery,
			req: func(t *testing.T) hxReq { return hxReq{authz: hxBearer(e.tok(t)), query: "access%5Ftoken=" + e.tok(t)} }},
		{class: "extraction", name: "form_body_access_token", want: noTok,
			req: func(t *testing.T) hxReq {
				return hxReq{contentType: "application/x-www-form-urlencoded", body: []byte("access_token=" + e.tok(t))}
			}},
		{class: "extraction", name: "cookie_access_token", want: noTok,
			req: func(t *testing.T) hxReq {
				return hxReq{header: map[string]string{"Cookie": "access_token=" + e.tok(t)}}
			}},
		{class: "extraction", name: "x_access_token_header", want: noTok,
			req: func(t *testing.T) hxReq { return hxReq{header: map[string]string{"X-Access-Token": e.tok(t)}} }},
		{class: "extraction", name: "oversize_token_9KiB", want: invalid, wantErr: validate.ErrTooLarge,
			req: tokReq(authtest.WithClaim("pad", strings.Repeat("a", 9<<10)))},

		// --- serialization: exactly one compact encoding per token
		// (RFC 7515 §3.1, §7.1; RFC 8725 §3.11).
		{class: "serialization", name: "two_segments", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { h, p, _ := hxSegments(t, e.tok(t)); return bearer(h + "." + p) }},
		{class: "serialization", name: "four_segments", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { tok := e.tok(t); _, _, s := hxSegments(t, tok); return bearer(tok + "." + s) }},
		{class: "serialization", name: "jwe_five_segments", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				_, p, _ := hxSegments(t, e.tok(t))
				jh := hxB64([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM","kid":"` + authtest.KIDRS256 + `"}`))
				return bearer(jh + "." + hxB64(make([]byte, 256)) + "." + hxB64(make([]byte, 12)) + "." + p + "." + hxB64(make([]byte, 16)))
			}},
		{class: "serialization", name: "json_serialization", want: malformed,
			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				return bearer(`{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`)
			}},
		{class: "serialization", name: "json_serialization_base64url", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				return bearer(hxB64([]byte(`{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`)))
			}},
		{class: "serialization", name: "padding_signature", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t) + "==") }},
		{class: "serialization", name: "padding_header", want: malformed,
			req: func(t *testing.T) hxReq { h, p, s := hxSegments(t, e.tok(t)); return bearer(h + "=." + p + "." + s) }},
		{class: "serialization", name: "std_base64_alphabet", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				for range 200 {
					h, p, s := hxSegments(t, e.tok(t))
					if strings.ContainsAny(s, "-_") {
						return bearer(h + "." + p + "." + strings.NewReplacer("-", "+", "_", "/").Replace(s))
					}
				}
				t.Fatal("200 signatures without - or _")
				return hxReq{}
			}},
		{class: "serialization", name: "noncanonical_trailing_bits", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
				h, p, s := hxSegments(t, e.tok(t))
				// 64 bytes are 86 characters; the last one carries 4
				// padding bits, which must be zero. Set one.
				last := strings.IndexByte(alphabet, s[len(s)-1])
				return bearer(h + "." + p + "." + s[:len(s)-1] + string(alphabet[last|1]))
			}},
		{class: "serialization", name: "whitespace_inside", want: malformed,
			req: func(t *testing.T) hxReq { h, p, s := hxSegments(t, e.tok(t)); return bearer(h + "." + p + " ." + s) }},
		{class: "serialization", name: "empty_header_segment", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { _, p, s := hxSegments(t, e.tok(t)); return bearer("." + p + "." + s) }},
		{class: "serialization", name: "empty_payload_segment", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { h, _, s := hxSegments(t, e.tok(t)); return bearer(h + ".." + s) }},
		{class: "serialization", name: "only_dots", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer("..") }},
		{class: "serialization", name: "duplicate_header_alg", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","alg":"none"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_header_kid_casefold", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","Kid":"`+authtest.KIDES256+`"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_header_alg_json_escaped", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","al\u0067":"none"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_payload_sub_json_escaped", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"s\u0075b":"admin"`)))
			}},
		// U+017F LATIN SMALL LETTER LONG S folds to "s": encoding/json
		// (Claims.Decode) would match "ſcope" to a "scope" field.
		{class: "serialization", name: "duplicate_payload_scope_long_s", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"ſcope":"admin"`)))
			}},
		{class: "serialization", name: "duplicate_payload_sub", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"sub":"admin"`)))
			}},
		{class: "serialization", name: "duplicate_payload_iss", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"iss":"`+authtest.WrongIssuerURL+`"`)))
			}},
		{class: "serialization", name: "duplicate_payload_scope_casefold", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"Scope":"admin"`)))
			}},
		{class: "serialization", name: "payload_array", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", hdr(nil), []byte(`[{"sub":"x"}]`))) }},
		{class: "serialization", name: "payload_string", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", hdr(nil), []byte(`"claims"`))) }},
		{class: "serialization", name: "payload_invalid_utf8", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				b := validPayload(`,"name":"` + "\xff\xfe" + `"`)
				return bearer(signed(t, es, "ES256", hdr(nil), b))
			}},
		{class: "serialization", name: "header_array", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", []byte(`["ES256"]`), e.claims())) }},

		// --- algorithms: an allow-list of asymmetric algorithms, and the
		// key's own "alg" (RFC 8725 §2.1, §3.1).
		{class: "algorithms", name: "none", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: func(t *testing.T) hxReq {
				return bearer(authtest.RawToken(hxJSON(t, hdr(map[string]any{"alg": "none"})), hxJSON(t, e.claims()), nil))
			}},
		{class: "algorithms", name: "None", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: func(t *testing.T) hxReq {
				return bearer(authtest.RawToken(hxJSON(t, hdr(map[string]any{"alg": "None"})), hxJSON(t, e.claims()), nil))
			}},
		{class: "algorithms", name: "NONE", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: func(t *testing.T) hxReq {
				return bearer(authtest.RawToken(hxJSON(t, hdr(map[string]any{"alg": "NONE"})), hxJSON(t, e.claims()), nil))
			}},
		{class: "algorithms", name: "none_authtest_unsigned", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: tokReq(authtest.Unsigned(), authtest.WithKID(authtest.KIDES256))},
		{class: "algorithms", name: "hs256_with_rs256_public_key_pem", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: tokReq(authtest.WithAlgorithm(jose.HS256))},
		{class: "algorithms", name: "hs512_with_rs256_public_key_pem", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: tokReq(authtest.WithAlgorithm(jose.HS512))},
		{class: "algorithms", name: "rs256_signature_header_es256", want: invalid, wantErr: validate.ErrKeyNotFound,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "RS256", hdr(map[string]any{"alg": "ES256", "kid": hxKIDRS256}), e.claims()))
			}},
		{class: "algorithms", name: "es256_header_with_rsa_kid", want: invalid, wantErr: validate.ErrKeyNotFound,
			req: tokReq(authtest.WithKID(authtest.KIDRS256))},
		{class: "algorithms", name: "es256_header_rsa_key_without_alg", want: invalid, wantErr: validate.ErrKeyNotFound,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "RS256", hdr(map[string]any{"kid": hxKIDRSANone}), e.claims()))
			}},
		{class: "algorithms", name: "eddsa_header_with_ec_kid", want: invalid, wantErr: validate.ErrKeyNotFound,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "EdDSA"}), e.claims()))
			}},
		// PS256 is in validate.DefaultAlgorithms, so it is allowed; but a
		// JWK whose "alg" is RS256 verifies RS256 only.
		{class: "algorithms", name: "ps256_key_pinned_to_rs256", want: invalid, wantErr: validate.ErrKeyNotFound,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "PS256", hdr(map[string]any{"alg": "PS256", "kid": hxKIDRS256}), e.claims()))
			}},
		{class: "algorithms", name: "ps256_key_without_alg_accepted", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "PS256", hdr(map[string]any{"alg": "PS256", "kid": hxKIDRSANone}), e.claims()))
			}},
		{class: "algorithms", name: "es256k_not_in_allow_list", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "ES256K"}), e.claims()))
			}},
		{class: "algorithms", name: "alg_lowercase", want: invalid, wantErr: validate.ErrUnsupportedAlgorithm,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "es256"}), e.claims()))
			}},
		{class: "algorithms", name: "alg_missing", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": nil}), e.claims()))
			}},
		{class: "algorithms", name: "alg_array", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": []string{"ES256"}}), e.claims()))
			}},
		{class: "algorithms", name: "control_es256", want: ok, req: tokReq()},
		{class: "algorithms", name: "control_rs256", want: ok, req: tokReq(authtest.WithAlgorithm(jose.RS256))},
		{class: "algorithms", name: "control_eddsa", want: ok, req: tokReq(authtest.WithAlgorithm(jose.EdDSA))},

		// --- signatures: each fails verification under a known kid, so
		// the validator refreshes once (rate-limited) and retries.
		{class: "signatures", name: "zero_length", want: invalid, wantErr: validate.ErrSignature, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq { h, p, _ := hxSegments(t, e.tok(t)); return bearer(h + "." + p + ".") }},
		{class: "signatures", name: "all_zeros", want: invalid, wantErr: validate.ErrSignature, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, p, _ := hxSegments(t, e.tok(t))
				return bearer(h + "." + p + "." + hxB64(make([]byte, 64)))
			}},
		{class: "signatures", name: "truncated_63_bytes", want: invalid, wantErr: validate.ErrSignature, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				sig, err := base64.RawURLEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				return bearer(h + "." + p + "." + hxB64(sig[:63]))
			}},
		{class: "signatures", name: "ecdsa_der_encoded", want: invalid, wantErr: validate.ErrSignature, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq {
				input := hxB64(hxJSON(t, hdr(nil))) + "." + hxB64(hxJSON(t, e.claims()))
				return bearer(input + "." + hxB64(es.sigBytes(t, "ES256", []byte(input), hxSigDER)))
			}},
		{class: "signatures", name: "tampered_payload_original_signature", want: invalid, wantErr: validate.ErrSignature, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, _, s := hxSegments(t, e.tok(t))
				return bearer(h + "." + hxB64(hxJSON(t, claims(map[string]any{"sub": "admin"}))) + "." + s)
			}},
		{class: "signatures", name: "signature_of_another_token", want: invalid, wantErr: validate.ErrSignature, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, p, _ := hxSegments(t, e.tok(t))
				_, _, s := hxSegments(t, e.tok(t))
				return bearer(h + "." + p + "." + s)
			}},
		{class: "signatures", name: "wrong_key_real_kid", want: invalid, wantErr: validate.ErrSignature, fetches: 1, req: tokReq(authtest.WrongKey())},
		{class: "signatures", name: "wrong_key_real_kid_rs256", want: invalid, wantErr: validate.ErrSignature, fetches: 1,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, hxSigner{authtest.GenerateKey(jose.RS256, "")}, "RS256", hdr(map[string]any{"alg": "RS256", "kid": hxKIDRS256}), e.claims()))
			}},

		// --- key selection: keys come only from the configured JWKS, by
		// kid (RFC 8725 §3.10; RFC 7515 §4.1.2-4.1.6 headers are refused).
		{class: "keys", name: "unknown_kid", want: invalid, wantErr: validate.ErrKeyNotFound, fetches: 1, req: tokReq(authtest.UnknownKID())},
		{class: "keys", name: "absent_kid", want: invalid, wantErr: validate.ErrKeyNotFound, req: tokReq(authtest.WithKID(""))},
		{class: "keys", name: "kid_not_a_string", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"kid": 1}), e.claims()))
			}},
		{class: "keys", name: "jku_attacker_jwks", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": "attacker-1", "jku": att.ts.URL + "/jwks"}), e.claims()))
			}},
		{class: "keys", name: "jku_on_validly_signed_token", want: invalid, wantErr: validate.ErrType,
			req: tokReq(authtest.WithHeader("jku", "http://"+att.ts.Listener.Addr().String()+"/jwks"))},
		{class: "keys", name: "x5u_attacker_certificate", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": "attacker-1", "x5u": att.ts.URL + "/cert.pem"}), e.claims()))
			}},
		{class: "keys", name: "jwk_embedded_attacker_key", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": nil, "jwk": att.publicJWK()}), e.claims()))
			}},
		{class: "keys", name: "jwk_embedded_with_real_kid", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": authtest.KIDES256, "jwk": att.publicJWK()}), e.claims()))
			}},
		{class: "keys", name: "x5c_attacker_certificate", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				x5c := []string{base64.StdEncoding.EncodeToString(att.certDER)}
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": nil, "x5c": x5c}), e.claims()))
			}},
		{class: "keys", name: "jwks_key_use_enc", want: invalid, wantErr: validate.ErrKeyNotFound, fetches: 1, req: tokReq(authtest.SignWith(encKey))},
		{class: "keys", name: "jwks_rsa_1024", want: invalid, wantErr: validate.ErrKeyNotFound, fetches: 1, req: tokReq(authtest.SignWith(weakKey))},
		{class: "keys", name: "duplicate_kid_first_key", want: ok, req: tokReq(authtest.SignWith(dup1))},
		{class: "keys", name: "duplicate_kid_second_key", want: ok, req: tokReq(authtest.SignWith(dup2))},
		{class: "keys", name: "duplicate_kid_unpublished_key", want: invalid, wantErr: validate.ErrSignature, fetches: 1, req: tokReq(authtest.SignWith(foreignDup))},
		{class: "keys", name: "kid_path_traversal", want: invalid, wantErr: validate.ErrKeyNotFound, fetches: 1, req: tokReq(authtest.WithKID("../../../../etc/passwd"))},

		// --- crit and b64 (RFC 7515 §4.1.11, RFC 7797): no extension is
		// understood, so any crit, and b64, is refused.
		{class: "crit", name: "crit_exp", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithHeader("crit", []string{"exp"}))},
		{class: "crit", name: "crit_empty", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithHeader("crit", []string{}))},
		{class: "crit", name: "crit_unknown_extension", want: invalid, wantErr: validate.ErrType,
			req: tokReq(authtest.WithHeader("crit", []string{"x-hx"}), authtest.WithHeader("x-hx", true))},
		{class: "crit", name: "crit_b64_false_unencoded_signing_input", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				// RFC 7797 §3: the signature covers the raw payload; the
				// token still carries it base64url-encoded.
				hb := hxJSON(t, hdr(map[string]any{"b64": false, "crit": []string{"b64"}}))
				pb := hxJSON(t, e.claims())
				input := hxB64(hb) + "." + string(pb)
				return bearer(hxB64(hb) + "." + hxB64(pb) + "." + hxB64(es.sigBytes(t, "ES256", []byte(input), hxSigJOSE)))
			}},
		{class: "crit", name: "b64_false_without_crit", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"b64": false}), e.claims()))
			}},
		{class: "crit", name: "cty_nested_jwt", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithHeader("cty", "JWT"))},

		// --- typ and cross-JWT confusion (RFC 9068 §2.1, §4; RFC 8725
		// §3.11, §3.12).
		{class: "typ", name: "typ_JWT", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithType("JWT"))},
		{class: "typ", name: "typ_absent", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithoutType())},
		{class: "typ", name: "typ_dpop_jwt", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithType("dpop+jwt"))},
		{class: "typ", name: "typ_secevent_jwt", want: invalid, wantErr: validate.ErrType, req: tokReq(authtest.WithType("secevent+jwt"))},
		{class: "typ", name: "typ_not_a_string", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"typ": 1}), e.claims()))
			}},
		{class: "typ", name: "typ_AT_JWT_case_insensitive", want: ok, req: tokReq(authtest.WithType("AT+JWT"))},
		{class: "typ", name: "typ_application_at_jwt", want: ok, req: tokReq(authtest.WithType("application/at+jwt"))},
		{class: "typ", name: "oidc_id_token", want: invalid, wantErr: validate.ErrType,
			req: tokReq(authtest.WithType("JWT"), authtest.WithAudience(authtest.DefaultClientID),
				authtest.WithClaim("nonce", "n-0S6_WzA2Mj"), authtest.WithClaim("azp", authtest.DefaultClientID),
				authtest.WithoutClaim("scope"), authtest.WithoutClaim("client_id"))},
		{class: "typ", name: "oidc_id_token_for_our_audience", want: invalid, wantErr: validate.ErrType,
			req: tokReq(authtest.WithType("JWT"), authtest.WithClaim("nonce", "n-0S6_WzA2Mj"))},
		{class: "typ", name: "id_token_claims_typed_at_jwt", want: invalid, wantErr: validate.ErrAudience,
			req: tokReq(authtest.WithAudience(authtest.DefaultClientID), authtest.WithClaim("nonce", "n-0S6_WzA2Mj"))},
		{class: "typ", name: "dpop_proof", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": att.publicJWK()}
				c := map[string]any{"jti": hxRandomHex(8), "htm": "POST", "htu": e.mcpURL, "iat": now()}
				return bearer(signed(t, attacker, "ES256", h, c))
			}},
		{class: "typ", name: "dpop_proof_signed_by_trusted_key", want: invalid, wantErr: validate.ErrType,
			req: func(t *testing.T) hxReq {
				c := claims(map[string]any{"htm": "POST", "htu": e.mcpURL})
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"typ": "dpop+jwt"}), c))
			}},

		// --- time claims (RFC 7519 §4.1.4-4.1.6) with the default leeway.
		{class: "time", name: "exp_now_minus_leeway_minus_1s", want: invalid, wantErr: validate.ErrExpired,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("exp", now()-leeway-1))) }},
		{class: "time", name: "exp_now_minus_leeway", want: invalid, wantErr: validate.ErrExpired,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("exp", now()-leeway))) }},
		{class: "time", name: "exp_now_minus_leeway_plus_1s", want: ok,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("exp", now()-leeway+1))) }},
		{class: "time", name: "nbf_now_plus_leeway_plus_1s", want: invalid, wantErr: validate.ErrNotYetValid,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("nbf", now()+leeway+1))) }},
		{class: "time", name: "nbf_now_plus_leeway", want: ok,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("nbf", now()+leeway))) }},
		{class: "time", name: "iat_now_plus_leeway_plus_1s", want: invalid, wantErr: validate.ErrIssuedAt,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("iat", now()+leeway+1))) }},
		{class: "time", name: "iat_now_plus_leeway", want: ok,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("iat", now()+leeway))) }},
		// A verified token is cached; the cache re-checks exp on every hit.
		{class: "time", name: "cached_token_expires", want: invalid, wantErr: validate.ErrExpired,
			req: func(t *testing.T) hxReq {
				tok := e.tok(t, authtest.WithClaim("exp", now()+60))
				if r := e.whoami(ctx, t, tok); r.status != http.StatusOK {
					t.Fatalf("first use: status %d", r.status)
				}
				e.iss.Advance(60*time.Second + validate.DefaultLeeway)
				return bearer(tok)
			}},
		{class: "time", name: "exp_missing", want: invalid, wantErr: validate.ErrMissingClaim, req: tokReq(authtest.WithoutClaim("exp"))},
		{class: "time", name: "iat_missing", want: invalid, wantErr: validate.ErrMissingClaim, req: tokReq(authtest.WithoutClaim("iat"))},
		{class: "time", name: "exp_string", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithClaim("exp", strconv.FormatInt(now()+3600, 10))))
			}},
		{class: "time", name: "exp_null", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("exp", json.RawMessage("null")))},
		{class: "time", name: "exp_true", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("exp", true))},
		{class: "time", name: "exp_1e300", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("exp", json.Number("1e300")))},
		{class: "time", name: "exp_negative", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("exp", -1))},
		{class: "time", name: "exp_float_with_fraction", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithClaim("exp", json.Number(fmt.Sprintf("%d.5", now()+3600)))))
			}},
		{class: "time", name: "exp_int_above_2_pow_63", want: invalid, wantErr: validate.ErrMalformed,
			req: tokReq(authtest.WithClaim("exp", json.Number("9223372036854775808000")))},
		{class: "time", name: "exp_2_pow_63", want: invalid, wantErr: validate.ErrMalformed,
			req: tokReq(authtest.WithClaim("exp", json.Number("9223372036854775808")))},
		{class: "time", name: "nbf_string", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithClaim("nbf", strconv.FormatInt(now(), 10))))
			}},

		// --- issuer and audience: exact string comparison (RFC 9068 §4,
		// RFC 8707 §2, RFC 7519 §4.1.3 "case-sensitive strings").
		{class: "issuer_audience", name: "iss_scheme_uppercase", want: invalid, wantErr: validate.ErrIssuer,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithClaim("iss", "HTTP"+strings.TrimPrefix(e.iss.URL(), "http"))))
			}},
		{class: "issuer_audience", name: "iss_host_alias_LOCALHOST", want: invalid, wantErr: validate.ErrIssuer,
			req: func(t *testing.T) hxReq {
				_, port, _ := strings.Cut(strings.TrimPrefix(e.iss.URL(), "http://"), ":")
				return bearer(e.tok(t, authtest.WithClaim("iss", "http://LOCALHOST:"+port)))
			}},
		{class: "issuer_audience", name: "iss_trailing_slash", want: invalid, wantErr: validate.ErrIssuer,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("iss", e.iss.URL()+"/"))) }},
		{class: "issuer_audience", name: "iss_prefix_trick", want: invalid, wantErr: validate.ErrIssuer,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("iss", e.iss.URL()+".evil"))) }},
		{class: "issuer_audience", name: "iss_userinfo_trick", want: invalid, wantErr: validate.ErrIssuer,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithClaim("iss", e.iss.URL()+"@evil.example")))
			}},
		// JSON strings compare after unescaping (RFC 8259 §8.3): an
		// escaped solidus is the same issuer and audience.
		{class: "issuer_audience", name: "iss_and_aud_json_escaped_solidus", want: ok,
			req: func(t *testing.T) hxReq {
				b := hxJSON(t, e.claims())
				b = bytes.Replace(b, []byte(`"iss":"http://`), []byte(`"iss":"http:\/\/`), 1)
				b = bytes.Replace(b, []byte(`"aud":"http://`), []byte(`"aud":"http:\/\/`), 1)
				return bearer(signed(t, es, "ES256", hdr(nil), b))
			}},
		{class: "issuer_audience", name: "iss_array", want: invalid, wantErr: validate.ErrMalformed,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithClaim("iss", []string{e.iss.URL()}))) }},
		{class: "issuer_audience", name: "iss_missing", want: invalid, wantErr: validate.ErrMissingClaim, req: tokReq(authtest.WithoutClaim("iss"))},
		{class: "issuer_audience", name: "iss_other_issuer", want: invalid, wantErr: validate.ErrIssuer, req: tokReq(authtest.WrongIssuer())},
		// MCP Canonical Server URI: uppercase scheme and host SHOULD be
		// accepted; the path is case-sensitive.
		{class: "issuer_audience", name: "aud_uppercase_scheme_host", want: ok,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithAudience(upperSchemeHost(e.mcpURL)))) }},
		{class: "issuer_audience", name: "aud_uppercase", want: invalid, wantErr: validate.ErrAudience,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithAudience(strings.ToUpper(e.mcpURL)))) }},
		{class: "issuer_audience", name: "aud_trailing_slash", want: invalid, wantErr: validate.ErrAudience,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithAudience(e.mcpURL+"/"))) }},
		{class: "issuer_audience", name: "aud_prefix_of_ours", want: invalid, wantErr: validate.ErrAudience,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithAudience(strings.TrimSuffix(e.mcpURL, "/mcp"))))
			}},
		{class: "issuer_audience", name: "aud_ours_as_prefix", want: invalid, wantErr: validate.ErrAudience,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.WithAudience(e.mcpURL+"-evil"))) }},
		{class: "issuer_audience", name: "aud_array_ours_and_others", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.WithAudience(authtest.WrongAudienceURL, e.mcpURL, "https://third.example")))
			}},
		{class: "issuer_audience", name: "aud_array_others_only", want: invalid, wantErr: validate.ErrAudience,
			req: tokReq(authtest.WithAudience(authtest.WrongAudienceURL, "https://third.example"))},
		{class: "issuer_audience", name: "aud_empty_array", want: invalid, wantErr: validate.ErrMissingClaim, req: tokReq(authtest.WithAudience())},
		{class: "issuer_audience", name: "aud_missing", want: invalid, wantErr: validate.ErrMissingClaim, req: tokReq(authtest.WithoutClaim("aud"))},
		{class: "issuer_audience", name: "aud_not_a_string", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("aud", 1))},
		{class: "issuer_audience", name: "host_spoofed_invalid_token", want: invalid, wantErr: validate.ErrExpired,
			req: func(t *testing.T) hxReq { return hxReq{authz: hxBearer(expired(t)), host: "evil.example"} }},
		{class: "issuer_audience", name: "host_spoofed_no_token", want: noTok,
			req: func(t *testing.T) hxReq { return hxReq{host: "evil.example:443"} }},
		{class: "issuer_audience", name: "x_forwarded_host_proto_spoofed", want: invalid, wantErr: validate.ErrExpired,
			req: func(t *testing.T) hxReq {
				return hxReq{authz: hxBearer(expired(t)), header: map[string]string{
					"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
					"Forwarded": "host=evil.example;proto=https", "X-Forwarded-Prefix": "/evil",
				}}
			}},
		// A valid token passes the middleware whatever the Host; on a
		// loopback listener the go-sdk's DNS-rebinding protection then
		// refuses the foreign Host, so the tool does not run either.
		{class: "issuer_audience", name: "host_spoofed_valid_token",
			want: hxWant{status: http.StatusForbidden, body: "Forbidden: invalid Host header \"evil.example\"\n", notMiddleware: true},
			req:  func(t *testing.T) hxReq { return hxReq{authz: hxBearer(e.tok(t)), host: "evil.example"} }},

		// --- scope formats (RFC 9068 §2.2.3, RFC 8693 §4.2, RFC 6749
		// §3.3). A token lacking scopes is an insufficient_scope 403 only
		// when its "scope" is well-formed; each 403 case has its own
		// subject, so the step-up bound (3 per principal) never applies.
		{class: "scope", name: "scope_array", want: invalid, wantErr: validate.ErrMalformed,
			req: tokReq(authtest.WithClaim("scope", []string{hxBaseScope, server.ScopeNotesWrite}))},
		{class: "scope", name: "scope_tab_separated", want: invalid, wantErr: validate.ErrMalformed,
			req: tokReq(authtest.WithClaim("scope", hxBaseScope+"\t"+server.ScopeNotesWrite))},
		{class: "scope", name: "scope_newline_separated", want: invalid, wantErr: validate.ErrMalformed,
			req: tokReq(authtest.WithClaim("scope", hxBaseScope+"\n"+server.ScopeNotesWrite))},
		{class: "scope", name: "scope_not_a_string", want: invalid, wantErr: validate.ErrMalformed, req: tokReq(authtest.WithClaim("scope", 7))},
		{class: "scope", name: "scope_comma_separated", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithClaim("scope", hxBaseScope+","+server.ScopeNotesWrite)))
			}},
		{class: "scope", name: "scp_array_not_allowed", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithoutClaim("scope"), authtest.WithClaim("scp", []string{hxBaseScope, server.ScopeNotesWrite})))
			}},
		{class: "scope", name: "scp_string_not_allowed", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithoutClaim("scope"), authtest.WithClaim("scp", hxBaseScope+" "+server.ScopeNotesWrite)))
			}},
		{class: "scope", name: "scope_empty", want: insufficient,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, uniqueSub(t), authtest.WithClaim("scope", ""))) }},
		{class: "scope", name: "scope_missing", want: insufficient,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, uniqueSub(t), authtest.WithoutClaim("scope"))) }},
		{class: "scope", name: "scope_lacking_base", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithScopes(server.ScopeNotesWrite)))
			}},
		{class: "scope", name: "scope_lacking_tool_scope", want: insufficient,
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, uniqueSub(t), authtest.WithScopes(hxBaseScope))) }},
		{class: "scope", name: "scope_uppercase", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithScopes(strings.ToUpper(hxBaseScope), strings.ToUpper(server.ScopeNotesWrite))))
			}},
		{class: "scope", name: "scope_prefix_of_required", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, uniqueSub(t), authtest.WithScopes("mcp:tool", "notes:writ")))
			}},
		{class: "scope", name: "scope_runs_of_spaces", want: ok,
			req: tokReq(authtest.WithClaim("scope", "  "+hxBaseScope+"   "+server.ScopeNotesWrite+" "))},
	}

	// Warm up: the key source's first fetch, through a valid request.
	if r := e.whoami(ctx, t, e.tok(t)); r.status != http.StatusOK {
		t.Fatalf("warm-up: status %d: %s", r.status, r.body)
	}
	if n := e.iss.JWKSFetches(); n != 1 {
		t.Fatalf("JWKS fetches after warm-up = %d, want 1", n)
	}

	var accepted []string
	perClass := map[string]int{}
	var wantFetches int64 = 1
	for _, class := range hxClasses(cases) {
		t.Run(class, func(t *testing.T) {
			for _, c := range cases {
				if c.class != class {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					// Subtests run one at a time, so these need no lock;
					// they are counted here so that -run filters work.
					perClass[class]++
					wantFetches += c.fetches
					if c.want.status == http.StatusOK {
						accepted = append(accepted, class+"/"+c.name)
					}
					// Open the key source's on-demand rate limit (it runs
					// on the issuer's clock), so a case that may refresh
					// does so exactly once.
					e.iss.Advance(rateLimit)
					req := c.req(t)
					if req.text == "" {
						req.text = class + "/" + c.name
					}
					before := e.counts(att)
					got := e.do(ctx, t, req)
					after := e.counts(att)
					c.want.check(t, got)
					if d := after.jwks - before.jwks; d != c.fetches {
						t.Errorf("JWKS fetches = %d, want %d", d, c.fetches)
					}
					if after.metadata != before.metadata || after.introspection != before.introspection {
						t.Errorf("unexpected requests to the issuer: metadata %d→%d, introspection %d→%d",
							before.metadata, after.metadata, before.introspection, after.introspection)
					}
					if c.wantErr != nil {
						tok, found := strings.CutPrefix(req.authz[0], "Bearer ")
						if !found {
							t.Fatalf("wantErr needs a single Bearer line, have %q", req.authz)
						}
						if _, err := e.val.Validate(ctx, tok); !errors.Is(err, c.wantErr) {
							t.Errorf("Validate error = %v, want %v", err, c.wantErr)
						}
					}
					if after.attacker != 0 {
						t.Errorf("the attacker's server received %d requests, want 0", after.attacker)
					}
					// Only a valid token lets the middleware read the body
					// (to find the MCP operation): 200 and 403.
					if s := got.status; s != http.StatusOK && s != http.StatusForbidden && got.bodyRead != 0 {
						t.Errorf("server read %d body bytes of a refused request, want 0", got.bodyRead)
					}
				})
			}
		})
	}

	// The notes store holds exactly the accepted cases: no refused case's
	// notes_write ran.
	got := e.notes(ctx, t)
	slices.Sort(got)
	slices.Sort(accepted)
	if !slices.Equal(got, accepted) {
		var leaked []string
		for _, n := range got {
			if !slices.Contains(accepted, n) {
				leaked = append(leaked, n)
			}
		}
		t.Errorf("notes = %q\nwant %q\nrefused cases whose tool call ran: %q", got, accepted, leaked)
	}
	if n := e.iss.JWKSFetches(); n != wantFetches {
		t.Errorf("total JWKS fetches = %d, want %d", n, wantFetches)
	}
	if n := att.requests.Load(); n != 0 {
		t.Errorf("attacker server requests = %d, want 0", n)
	}
	total := 0
	for _, n := range perClass {
		total += n
	}
	t.Logf("hostile cases: %d in total, per class %v", total, perClass)
}

// hxClasses returns the classes of cases in first-seen order.
func hxClasses(cases []hxCase) []string {
	var out []string
	for _, c := range cases {
		if !slices.Contains(out, c.class) {
			out = append(out, c.class)
		}
	}
	return out
}

// upperSchemeHost upper-cases the scheme and authority of an absolute URL.
func upperSchemeHost(u string) string {
	i := strings.Index(u, "://") + 3
	j := strings.IndexByte(u[i:], '/')
	return strings.ToUpper(u[:i+j]) + u[i+j:]
}
