package integration

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// hxExtractionCases are the extraction cases: RFC 6750 §2.1 header only; §2.2 body
// and §2.3 query are not bearer methods of this server.
func hxExtractionCases(fx *hxHostile) []hxCase {
	e := fx.e
	tokReq := fx.tokReq
	ok, invalid, noTok, malformed, multiple, inQuery := fx.ok, fx.invalid, fx.noTok, fx.malformed, fx.multiple, fx.inQuery
	return []hxCase{
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
		{class: "extraction", name: "oversize_token_9KiB", want: invalid, wantErr: validate.Error{Reason: "too_large"},
			req: tokReq(authtest.Token{Claims: map[string]any{"pad": strings.Repeat("a", 9<<10)}})},
	}
}

// hxSerializationCases are the serialization cases: exactly one compact
// encoding per token (RFC 7515 §3.1, §7.1; RFC 8725 §3.11).
func hxSerializationCases(fx *hxHostile) []hxCase {
	e, es := fx.e, fx.es
	hdr, signed, bearer, validPayload := fx.hdr, fx.signed, fx.bearer, fx.validPayload
	invalid, malformed := fx.invalid, fx.malformed
	return []hxCase{
		{class: "serialization", name: "two_segments", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { h, p, _ := hxSegments(t, e.tok(t)); return bearer(h + "." + p) }},
		{class: "serialization", name: "four_segments", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { tok := e.tok(t); _, _, s := hxSegments(t, tok); return bearer(tok + "." + s) }},
		{class: "serialization", name: "jwe_five_segments", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				_, p, _ := hxSegments(t, e.tok(t))
				jh := hxB64([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM","kid":"` + "rs256-1" + `"}`))
				return bearer(jh + "." + hxB64(make([]byte, 256)) + "." + hxB64(make([]byte, 12)) + "." + p + "." + hxB64(make([]byte, 16)))
			}},
		{class: "serialization", name: "json_serialization", want: malformed,
			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				return bearer(`{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`)
			}},
		{class: "serialization", name: "json_serialization_base64url", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				return bearer(hxB64([]byte(`{"payload":"` + p + `","protected":"` + h + `","signature":"` + s + `"}`)))
			}},
		{class: "serialization", name: "padding_signature", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { return bearer(e.tok(t) + "==") }},
		{class: "serialization", name: "padding_header", want: malformed,
			req: func(t *testing.T) hxReq { h, p, s := hxSegments(t, e.tok(t)); return bearer(h + "=." + p + "." + s) }},
		{class: "serialization", name: "std_base64_alphabet", want: invalid, wantErr: validate.Error{Reason: "malformed"},
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
		{class: "serialization", name: "noncanonical_trailing_bits", want: invalid, wantErr: validate.Error{Reason: "malformed"},
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
		{class: "serialization", name: "empty_header_segment", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { _, p, s := hxSegments(t, e.tok(t)); return bearer("." + p + "." + s) }},
		{class: "serialization", name: "empty_payload_segment", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { h, _, s := hxSegments(t, e.tok(t)); return bearer(h + ".." + s) }},
		{class: "serialization", name: "only_dots", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { return bearer("..") }},
		{class: "serialization", name: "duplicate_header_alg", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","alg":"none"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_header_kid_casefold", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","Kid":"`+"es256-1"+`"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_header_alg_json_escaped", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", []byte(`{"alg":"ES256","typ":"at+jwt","kid":"`+hxKIDES256+`","al\u0067":"none"}`), e.claims()))
			}},
		{class: "serialization", name: "duplicate_payload_sub_json_escaped", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"s\u0075b":"admin"`)))
			}},
		// U+017F LATIN SMALL LETTER LONG S folds to "s": encoding/json
		// (Claims.Decode) would match "ſcope" to a "scope" field.
		{class: "serialization", name: "duplicate_payload_scope_long_s", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"ſcope":"admin"`)))
			}},
		{class: "serialization", name: "duplicate_payload_sub", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"sub":"admin"`)))
			}},
		{class: "serialization", name: "duplicate_payload_iss", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"iss":"`+authtest.WrongIssuer().Issuer+`"`)))
			}},
		{class: "serialization", name: "duplicate_payload_scope_casefold", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(nil), validPayload(`,"Scope":"admin"`)))
			}},
		{class: "serialization", name: "payload_array", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", hdr(nil), []byte(`[{"sub":"x"}]`))) }},
		{class: "serialization", name: "payload_string", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", hdr(nil), []byte(`"claims"`))) }},
		{class: "serialization", name: "payload_invalid_utf8", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				b := validPayload(`,"name":"` + "\xff\xfe" + `"`)
				return bearer(signed(t, es, "ES256", hdr(nil), b))
			}},
		{class: "serialization", name: "header_array", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq { return bearer(signed(t, es, "ES256", []byte(`["ES256"]`), e.claims())) }},
	}
}
