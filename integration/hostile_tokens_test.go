package integration

import (
	"encoding/base64"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// hxAlgorithmCases are the algorithms cases: an allow-list of asymmetric
// algorithms, and the key's own "alg" (RFC 8725 §2.1, §3.1).
func hxAlgorithmCases(fx *hxHostile) []hxCase {
	e, es, rs := fx.e, fx.es, fx.rs
	hdr, signed, bearer, tokReq := fx.hdr, fx.signed, fx.bearer, fx.tokReq
	ok, invalid := fx.ok, fx.invalid
	return []hxCase{
		{class: "algorithms", name: "none", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: func(t *testing.T) hxReq {
				return bearer(hxB64(hxJSON(t, hdr(map[string]any{"alg": "none"}))) + "." + hxB64(hxJSON(t, e.claims())) + ".")
			}},
		{class: "algorithms", name: "None", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: func(t *testing.T) hxReq {
				return bearer(hxB64(hxJSON(t, hdr(map[string]any{"alg": "None"}))) + "." + hxB64(hxJSON(t, e.claims())) + ".")
			}},
		{class: "algorithms", name: "NONE", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: func(t *testing.T) hxReq {
				return bearer(hxB64(hxJSON(t, hdr(map[string]any{"alg": "NONE"}))) + "." + hxB64(hxJSON(t, e.claims())) + ".")
			}},
		{class: "algorithms", name: "none_authtest_unsigned", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: tokReq(authtest.Token{Alg: "none", KID: "es256-1"})},
		{class: "algorithms", name: "hs256_with_rs256_public_key_pem", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: tokReq(authtest.Token{Alg: jose.HS256})},
		{class: "algorithms", name: "hs512_with_rs256_public_key_pem", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: tokReq(authtest.Token{Alg: jose.HS512})},
		{class: "algorithms", name: "rs256_signature_header_es256", want: invalid, wantErr: validate.Error{Reason: "unknown_key"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "RS256", hdr(map[string]any{"alg": "ES256", "kid": hxKIDRS256}), e.claims()))
			}},
		{class: "algorithms", name: "es256_header_with_rsa_kid", want: invalid, wantErr: validate.Error{Reason: "unknown_key"},
			req: tokReq(authtest.Token{KID: "rs256-1"})},
		{class: "algorithms", name: "es256_header_rsa_key_without_alg", want: invalid, wantErr: validate.Error{Reason: "unknown_key"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "RS256", hdr(map[string]any{"kid": hxKIDRSANone}), e.claims()))
			}},
		{class: "algorithms", name: "eddsa_header_with_ec_kid", want: invalid, wantErr: validate.Error{Reason: "unknown_key"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "EdDSA"}), e.claims()))
			}},
		// PS256 is in validate's default algorithms, so it is allowed; but a
		// JWK whose "alg" is RS256 verifies RS256 only.
		{class: "algorithms", name: "ps256_key_pinned_to_rs256", want: invalid, wantErr: validate.Error{Reason: "unknown_key"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "PS256", hdr(map[string]any{"alg": "PS256", "kid": hxKIDRS256}), e.claims()))
			}},
		{class: "algorithms", name: "ps256_key_without_alg_accepted", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, rs, "PS256", hdr(map[string]any{"alg": "PS256", "kid": hxKIDRSANone}), e.claims()))
			}},
		{class: "algorithms", name: "es256k_not_in_allow_list", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "ES256K"}), e.claims()))
			}},
		{class: "algorithms", name: "alg_lowercase", want: invalid, wantErr: validate.Error{Reason: "algorithm"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": "es256"}), e.claims()))
			}},
		{class: "algorithms", name: "alg_missing", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": nil}), e.claims()))
			}},
		{class: "algorithms", name: "alg_array", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"alg": []string{"ES256"}}), e.claims()))
			}},
		{class: "algorithms", name: "control_es256", want: ok, req: tokReq()},
		{class: "algorithms", name: "control_rs256", want: ok, req: tokReq(authtest.Token{Alg: jose.RS256})},
		{class: "algorithms", name: "control_eddsa", want: ok, req: tokReq(authtest.Token{Alg: jose.EdDSA})},
	}
}

// hxSignatureCases are the signatures cases: each fails verification under a
// known kid, so the validator refreshes once (rate-limited) and retries.
func hxSignatureCases(fx *hxHostile) []hxCase {
	e, es := fx.e, fx.es
	hdr, claims, signed, bearer, tokReq := fx.hdr, fx.claims, fx.signed, fx.bearer, fx.tokReq
	invalid := fx.invalid
	return []hxCase{
		{class: "signatures", name: "zero_length", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq { h, p, _ := hxSegments(t, e.tok(t)); return bearer(h + "." + p + ".") }},
		{class: "signatures", name: "all_zeros", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, p, _ := hxSegments(t, e.tok(t))
				return bearer(h + "." + p + "." + hxB64(make([]byte, 64)))
			}},
		{class: "signatures", name: "truncated_63_bytes", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq {
				h, p, s := hxSegments(t, e.tok(t))
				sig, err := base64.RawURLEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				return bearer(h + "." + p + "." + hxB64(sig[:63]))
			}},
		{class: "signatures", name: "ecdsa_der_encoded", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 0, // implausible length: no refresh

			req: func(t *testing.T) hxReq {
				input := hxB64(hxJSON(t, hdr(nil))) + "." + hxB64(hxJSON(t, e.claims()))
				return bearer(input + "." + hxB64(es.sigBytes(t, "ES256", []byte(input), hxSigDER)))
			}},
		{class: "signatures", name: "tampered_payload_original_signature", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, _, s := hxSegments(t, e.tok(t))
				return bearer(h + "." + hxB64(hxJSON(t, claims(map[string]any{"sub": "admin"}))) + "." + s)
			}},
		{class: "signatures", name: "signature_of_another_token", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1,
			req: func(t *testing.T) hxReq {
				h, p, _ := hxSegments(t, e.tok(t))
				_, _, s := hxSegments(t, e.tok(t))
				return bearer(h + "." + p + "." + s)
			}},
		{class: "signatures", name: "wrong_key_real_kid", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1, req: tokReq(authtest.Token{ForeignKey: true})},
		{class: "signatures", name: "wrong_key_real_kid_rs256", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1,
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, hxSigner{authtest.GenerateKey(jose.RS256, "")}, "RS256", hdr(map[string]any{"alg": "RS256", "kid": hxKIDRS256}), e.claims()))
			}},
	}
}

// hxKeyCases are the key-selection cases: keys come only from the configured
// JWKS, by kid (RFC 8725 §3.10; RFC 7515 §4.1.2-4.1.6 headers are refused).
func hxKeyCases(fx *hxHostile) []hxCase {
	e, att, es, attacker := fx.e, fx.att, fx.es, fx.attacker
	encKey, weakKey, dup1, dup2, foreignDup := fx.encKey, fx.weakKey, fx.dup1, fx.dup2, fx.foreignDup
	hdr, signed, bearer, tokReq := fx.hdr, fx.signed, fx.bearer, fx.tokReq
	ok, invalid := fx.ok, fx.invalid
	return []hxCase{
		{class: "keys", name: "unknown_kid", want: invalid, wantErr: validate.Error{Reason: "unknown_key"}, fetches: 1, req: tokReq(authtest.Token{ForeignKey: true, KID: "unknown-kid"})},
		{class: "keys", name: "absent_kid", want: ok, req: tokReq(authtest.NoKID())}, // RFC 7515 §4.1.4: kid is optional
		{class: "keys", name: "kid_not_a_string", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"kid": 1}), e.claims()))
			}},
		{class: "keys", name: "jku_attacker_jwks", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": "attacker-1", "jku": att.ts.URL + "/jwks"}), e.claims()))
			}},
		{class: "keys", name: "jku_on_validly_signed_token", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: tokReq(authtest.Token{Header: map[string]any{"jku": "http://" + att.ts.Listener.Addr().String() + "/jwks"}})},
		{class: "keys", name: "x5u_attacker_certificate", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": "attacker-1", "x5u": att.ts.URL + "/cert.pem"}), e.claims()))
			}},
		{class: "keys", name: "jwk_embedded_attacker_key", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": nil, "jwk": att.publicJWK()}), e.claims()))
			}},
		{class: "keys", name: "jwk_embedded_with_real_kid", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": "es256-1", "jwk": att.publicJWK()}), e.claims()))
			}},
		{class: "keys", name: "x5c_attacker_certificate", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				x5c := []string{base64.StdEncoding.EncodeToString(att.certDER)}
				return bearer(signed(t, attacker, "ES256", hdr(map[string]any{"kid": nil, "x5c": x5c}), e.claims()))
			}},
		{class: "keys", name: "jwks_key_use_enc", want: invalid, wantErr: validate.Error{Reason: "unknown_key"}, fetches: 1, req: tokReq(authtest.Token{Key: encKey})},
		{class: "keys", name: "jwks_rsa_1024", want: invalid, wantErr: validate.Error{Reason: "unknown_key"}, fetches: 1, req: tokReq(authtest.Token{Key: weakKey})},
		{class: "keys", name: "duplicate_kid_first_key", want: ok, req: tokReq(authtest.Token{Key: dup1})},
		{class: "keys", name: "duplicate_kid_second_key", want: ok, req: tokReq(authtest.Token{Key: dup2})},
		{class: "keys", name: "duplicate_kid_unpublished_key", want: invalid, wantErr: validate.Error{Reason: "signature"}, fetches: 1, req: tokReq(authtest.Token{Key: foreignDup})},
		{class: "keys", name: "kid_path_traversal", want: invalid, wantErr: validate.Error{Reason: "unknown_key"}, fetches: 1, req: tokReq(authtest.Token{KID: "../../../../etc/passwd"})},
	}
}

// hxCritCases are the crit and b64 cases (RFC 7515 §4.1.11, RFC 7797): no
// extension is understood, so any crit, and b64, is refused.
func hxCritCases(fx *hxHostile) []hxCase {
	e, es := fx.e, fx.es
	hdr, signed, bearer, tokReq := fx.hdr, fx.signed, fx.bearer, fx.tokReq
	invalid := fx.invalid
	return []hxCase{
		{class: "crit", name: "crit_exp", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Header: map[string]any{"crit": []string{"exp"}}})},
		{class: "crit", name: "crit_empty", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Header: map[string]any{"crit": []string{}}})},
		{class: "crit", name: "crit_unknown_extension", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: tokReq(authtest.Token{Header: map[string]any{"crit": []string{"x-hx"}, "x-hx": true}})},
		{class: "crit", name: "crit_b64_false_unencoded_signing_input", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				// RFC 7797 §3: the signature covers the raw payload; the
				// token still carries it base64url-encoded.
				hb := hxJSON(t, hdr(map[string]any{"b64": false, "crit": []string{"b64"}}))
				pb := hxJSON(t, e.claims())
				input := hxB64(hb) + "." + string(pb)
				return bearer(hxB64(hb) + "." + hxB64(pb) + "." + hxB64(es.sigBytes(t, "ES256", []byte(input), hxSigJOSE)))
			}},
		{class: "crit", name: "b64_false_without_crit", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"b64": false}), e.claims()))
			}},
		{class: "crit", name: "cty_nested_jwt", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Header: map[string]any{"cty": "JWT"}})},
	}
}

// hxTypCases are the typ and cross-JWT confusion cases (RFC 9068 §2.1, §4;
// RFC 8725 §3.11, §3.12).
func hxTypCases(fx *hxHostile) []hxCase {
	e, att, es, attacker := fx.e, fx.att, fx.es, fx.attacker
	hdr, claims, signed, bearer, tokReq, now := fx.hdr, fx.claims, fx.signed, fx.bearer, fx.tokReq, fx.now
	ok, invalid := fx.ok, fx.invalid
	return []hxCase{
		{class: "typ", name: "typ_JWT", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Typ: "JWT"})},
		{class: "typ", name: "typ_absent", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Header: map[string]any{"typ": nil}})},
		{class: "typ", name: "typ_dpop_jwt", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Typ: "dpop+jwt"})},
		{class: "typ", name: "typ_secevent_jwt", want: invalid, wantErr: validate.Error{Reason: "type"}, req: tokReq(authtest.Token{Typ: "secevent+jwt"})},
		{class: "typ", name: "typ_not_a_string", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"typ": 1}), e.claims()))
			}},
		{class: "typ", name: "typ_AT_JWT_case_insensitive", want: ok, req: tokReq(authtest.Token{Typ: "AT+JWT"})},
		{class: "typ", name: "typ_application_at_jwt", want: ok, req: tokReq(authtest.Token{Typ: "application/at+jwt"})},
		{class: "typ", name: "oidc_id_token", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: tokReq(authtest.Token{Typ: "JWT", Audience: []string{"client-1"}, Claims: map[string]any{"nonce": "n-0S6_WzA2Mj", "azp": "client-1", "scope": nil, "client_id": nil}})},
		{class: "typ", name: "oidc_id_token_for_our_audience", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: tokReq(authtest.Token{Typ: "JWT", Claims: map[string]any{"nonce": "n-0S6_WzA2Mj"}})},
		{class: "typ", name: "id_token_claims_typed_at_jwt", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: tokReq(authtest.Token{Audience: []string{"client-1"}, Claims: map[string]any{"nonce": "n-0S6_WzA2Mj"}})},
		{class: "typ", name: "dpop_proof", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": att.publicJWK()}
				c := map[string]any{"jti": hxRandomHex(8), "htm": "POST", "htu": e.mcpURL, "iat": now()}
				return bearer(signed(t, attacker, "ES256", h, c))
			}},
		{class: "typ", name: "dpop_proof_signed_by_trusted_key", want: invalid, wantErr: validate.Error{Reason: "type"},
			req: func(t *testing.T) hxReq {
				c := claims(map[string]any{"htm": "POST", "htu": e.mcpURL})
				return bearer(signed(t, es, "ES256", hdr(map[string]any{"typ": "dpop+jwt"}), c))
			}},
	}
}

// hxConfirmationCases are sender-constrained tokens presented as bearer
// tokens (RFC 9449 §7.1, RFC 8705 §3): with DPoP off, a token bound to a
// key (cnf) is refused whatever its confirmation, since nobody checks the
// proof of possession.
func hxConfirmationCases(fx *hxHostile) []hxCase {
	tokReq, invalid, noTok := fx.tokReq, fx.invalid, fx.noTok
	e := fx.e
	jkt := map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
	return []hxCase{
		{class: "confirmation", name: "dpop_bound_without_proof", want: invalid, wantErr: validate.Error{Reason: "sender_constrained"},
			req: tokReq(authtest.Token{Claims: map[string]any{"cnf": jkt}})},
		{class: "confirmation", name: "mtls_bound", want: invalid, wantErr: validate.Error{Reason: "sender_constrained"},
			req: tokReq(authtest.Token{Claims: map[string]any{"cnf": map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}})},
		{class: "confirmation", name: "cnf_empty", want: invalid, wantErr: validate.Error{Reason: "sender_constrained"},
			req: tokReq(authtest.Token{Claims: map[string]any{"cnf": map[string]any{}}})},
		{class: "confirmation", name: "dpop_bound_dpop_scheme_without_proof", want: noTok,
			req: func(t *testing.T) hxReq {
				return hxReq{authz: []string{"DPoP " + e.tok(t, authtest.Token{Claims: map[string]any{"cnf": jkt}})}}
			}},
	}
}
