package validate

import (
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jws"
	"strings"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// This file is the whole JOSE boundary: everything this package does
// itself for a JWS, rather than through a library. Everything else is
// delegated (docs/jose.md):
//
//   - JSON: internal/strictjson, over go-json-experiment/json, reads the
//     header and the claims set (one value, valid UTF-8, no duplicate
//     names, no case variants; RFC 7515 §5.2 step 4, RFC 7519 §4).
//   - Keys: go-jose parses every JWK (RFC 7517 §4, RFC 7518 §6) into a
//     jose.JSONWebKey, with its own checks (curve points on the curve,
//     low-order Ed25519 points refused, RSA parameters); jws.UsableKey
//     (internal/jws) then matches "use", "alg", "kid", type, curve and size.
//   - Signatures: crypto/ecdsa, crypto/rsa and crypto/ed25519 verify
//     (RFC 7518 §3.3-3.5, RFC 8037 §3.1), in internal/jws.
//
// What is done here, each with the clause it implements:
//
//   - The compact serialization (RFC 7515 §7.1, §5.2 steps 1-2): exactly
//     three segments separated by two dots; a five-segment JWE (RFC 7516
//     §7.1) and the JSON serialization (RFC 7515 §7.2) are refused, as
//     are empty header and payload segments.
//   - base64url (RFC 7515 §2, RFC 4648 §5): unpadded, URL alphabet,
//     canonical (non-zero trailing bits refused), no line breaks or other
//     bytes encoding/base64 would skip, so a token has one encoding.
//   - The JOSE header (RFC 7515 §4, RFC 8725 §3.1): a JSON object of at
//     most 32 parameters; "alg", "typ" and "kid" must be strings when
//     present;
//   - "alg" (RFC 7515 §4.1.1, RFC 8725 §3.1-3.2): required and in the
//     configured allow-list of asymmetric algorithms, compared exactly;
//     "none" and HMAC can never be configured, so an "alg" never chooses
//     how a key is used (no RS/HS confusion). "Ed25519" (RFC 9864 §2.2) is
//     accepted as well as the polymorphic "EdDSA" (RFC 8037 §3.1), both
//     for Ed25519 keys only.
//   - Parameters that would make the token choose its own key or change
//     how it is processed are refused, never fetched or followed: "jku",
//     "x5u" (RFC 7515 §4.1.2, §4.1.5; RFC 8725 §3.10), "jwk", "x5c"
//     (§4.1.3, §4.1.6), "crit" (§4.1.11: no extension is understood, so
//     any "crit" must fail), "b64" (RFC 7797 §3), and "cty" (§4.1.10; RFC
//     7519 §5.2: a nested JWT or a payload that is not a claims set).
//   - "typ" (RFC 9068 §2.1, RFC 8725 §3.11): "at+jwt", with or without
//     the "application/" prefix (RFC 7515 §4.1.9), case-insensitively;
//     Config.AllowJWTType also accepts "JWT" and no "typ".
//   - "kid" (RFC 7515 §4.1.4): optional unless Config.RequireKID; it
//     only selects among the issuer's own keys, and without it every key
//     of the issuer that fits "alg" is a candidate (at most 8).

// Wrapped errors for the parse stage. They carry no token data, are
// allocated once, and cost nothing on the failure path.
var (
	errSegments        = fmt.Errorf("%w: not a compact JWS with three base64url segments", errMalformed)
	errBase64          = fmt.Errorf("%w: segment is not canonical unpadded base64url", errMalformed)
	errHeaderType      = fmt.Errorf("%w: header parameter has the wrong JSON type", errMalformed)
	errHeaderSize      = fmt.Errorf("%w: more than 32 header parameters", errMalformed)
	errNoAlg           = fmt.Errorf("%w: missing alg header", errMalformed)
	errAlg             = fmt.Errorf("%w: alg not allowed", errUnsupportedAlgorithm)
	errForbiddenHeader = fmt.Errorf("%w: crit, b64, jku, x5u, jwk or x5c header present", errType)
	errContentType     = fmt.Errorf("%w: cty header present (nested JWT or non-claims payload)", errType)
	errTyp             = fmt.Errorf("%w: typ is not at+jwt", errType)
	errNoKID           = fmt.Errorf("%w: no kid header", errKeyNotFound)
)

// maxHeaderParams bounds the JOSE header, which is read before the
// signature is checked; real headers have a handful of parameters.
const maxHeaderParams = 32

// header is what this package reads from the JOSE header (RFC 7515 §4).
type header struct {
	alg    *jws.Alg
	kid    string
	hasKID bool
}

// token is a parsed compact JWS whose signature is not yet verified.
type token struct {
	header
	input   []byte // signing input: ASCII(header "." payload)
	sig     []byte // decoded signature
	scratch []byte // jws.ScratchSize bytes for jws.Verify
	pay     []byte // decoded claims set, in the parse buffer
	payload string // the same bytes as a string, retained by Claims
}

// parse splits and decodes raw into tok and reads its header, without
// verifying the signature. The claims set is only decoded here; collect
// reads it.
func (v *Validator) parse(raw string, tok *token) error {
	d1, d2, ok := jws.Split(raw)
	if !ok || d1 == 0 || d2 == d1+1 {
		return errSegments
	}
	hl := jws.Encoding.DecodedLen(d1)
	pl := jws.Encoding.DecodedLen(d2 - d1 - 1)
	sl := jws.Encoding.DecodedLen(len(raw) - d2 - 1)
	// One allocation: a copy of raw (whose prefix is the signing input),
	// the three decoded segments, and scratch space for verification.
	n := len(raw)
	buf := make([]byte, n+hl+pl+sl+jws.ScratchSize)
	copy(buf, raw)
	tok.scratch = buf[n+hl+pl+sl:]
	tok.input = buf[:d2:d2]
	hdr, err := decodeSegment(buf[n:n+hl], buf[:d1])
	if err != nil {
		return err
	}
	if tok.pay, err = decodeSegment(buf[n+hl:n+hl+pl], buf[d1+1:d2]); err != nil {
		return err
	}
	if tok.sig, err = decodeSegment(buf[n+hl+pl:n+hl+pl+sl], buf[d2+1:n]); err != nil {
		return err
	}
	return v.readHeader(hdr, &tok.header)
}

func decodeSegment(dst, src []byte) ([]byte, error) {
	b, ok := jws.Decode(dst, src)
	if !ok {
		return nil, errBase64
	}
	return b, nil
}

// readHeader reads alg, typ, kid and the forbidden parameters from the
// JOSE header hdr, in this order of checks: structure (Error "malformed"), alg
// (Error "algorithm"), forbidden parameters and cty (Error "type"), typ
// (Error "type"), kid (Error "unknown_key").
func (v *Validator) readHeader(hdr []byte, h *header) error {
	var alg, typ string
	var hasTyp, forbidden, cty, badType bool
	n := 0
	hs := string(hdr) // kid outlives the parse buffer
	err := readObject(&v.json, hdr, hs, v.headerNames, func(name []byte, value string) error {
		if n++; n > maxHeaderParams {
			return errHeaderSize
		}
		var ok bool
		switch string(name) {
		case "alg":
			alg, ok = strictjson.String(value)
			badType = badType || !ok
		case "typ":
			typ, ok = strictjson.String(value)
			badType, hasTyp = badType || !ok, true
		case "kid":
			h.kid, ok = strictjson.String(value)
			badType, h.hasKID = badType || !ok, ok && h.kid != ""
		case "cty":
			cty = true
		case "crit", "b64", "jku", "x5u", "jwk", "x5c":
			// Never a trust source, never fetched, and no extension is
			// understood (RFC 7515 §4.1.11, RFC 7797, RFC 8725 §3.10).
			forbidden = true
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case badType:
		return errHeaderType
	case alg == "":
		return errNoAlg
	}
	if h.alg = v.allowedAlg(alg); h.alg == nil {
		return errAlg
	}
	if forbidden {
		return errForbiddenHeader
	}
	if cty {
		return errContentType
	}
	if !v.typeAllowed(typ, hasTyp) {
		return errTyp
	}
	if !h.hasKID && v.cfg.RequireKID {
		return errNoKID
	}
	return nil
}

// allowedAlg returns the spec of alg if it is in the allow-list.
func (v *Validator) allowedAlg(alg string) *jws.Alg {
	for i := range v.algs {
		if string(v.algs[i].Name()) == alg {
			return &v.algs[i]
		}
	}
	return nil
}

// typeAllowed applies RFC 9068 §2.1 to the "typ" header: "at+jwt", with or
// without the "application/" prefix (RFC 7515 §4.1.9), case-insensitively.
func (v *Validator) typeAllowed(typ string, present bool) bool {
	if !present {
		return v.cfg.AllowJWTType
	}
	const prefix = "application/"
	if len(typ) > len(prefix) && strings.EqualFold(typ[:len(prefix)], prefix) {
		typ = typ[len(prefix):]
	}
	if strings.EqualFold(typ, "at+jwt") {
		return true
	}
	return v.cfg.AllowJWTType && strings.EqualFold(typ, "jwt")
}
