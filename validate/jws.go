package validate

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Wrapped errors for the parse stage. They carry no token data, are
// allocated once, and cost nothing on the failure path.
var (
	errSegments        = fmt.Errorf("%w: not a compact JWS with three base64url segments", ErrMalformed)
	errBase64          = fmt.Errorf("%w: segment is not canonical unpadded base64url", ErrMalformed)
	errNotObject       = fmt.Errorf("%w: not a JSON object", ErrMalformed)
	errMalformedJSON   = fmt.Errorf("%w: invalid JSON", ErrMalformed)
	errDuplicateMember = fmt.Errorf("%w: duplicate member name", ErrMalformed)
	errHeaderJSON      = fmt.Errorf("%w: header is not a UTF-8 JSON object", ErrMalformed)
	errPayloadJSON     = fmt.Errorf("%w: claims set is not a UTF-8 JSON object", ErrMalformed)
	errHeaderType      = fmt.Errorf("%w: header parameter has the wrong JSON type", ErrMalformed)
	errHeaderSize      = fmt.Errorf("%w: more than 32 header parameters", ErrMalformed)
	errNoAlg           = fmt.Errorf("%w: missing alg header", ErrMalformed)
	errAlg             = fmt.Errorf("%w: alg not allowed", ErrUnsupportedAlgorithm)
	errForbiddenHeader = fmt.Errorf("%w: crit, b64, jku, x5u, jwk or x5c header present", ErrType)
	errContentType     = fmt.Errorf("%w: cty header present (nested JWT or non-claims payload)", ErrType)
	errTyp             = fmt.Errorf("%w: typ is not at+jwt", ErrType)
	errNoKID           = fmt.Errorf("%w: no kid header", ErrKeyNotFound)
)

// maxHeaderParams bounds the JOSE header, which is read before the
// signature is checked; real headers have a handful of parameters.
const maxHeaderParams = 32

// b64 decodes unpadded base64url strictly: padding, the standard alphabet
// and non-zero trailing bits are all refused (RFC 7515 §2, RFC 4648 §3.5),
// so one token has exactly one encoding. Line breaks, which
// encoding/base64 would skip, are refused by splitCompact first.
var b64 = base64.RawURLEncoding.Strict()

// header is what this package reads from the JOSE header (RFC 7515 §4).
type header struct {
	alg    *algSpec
	kid    string
	hasKID bool
}

// token is a parsed compact JWS whose signature is not yet verified.
type token struct {
	header
	input   []byte // signing input: ASCII(header "." payload)
	sig     []byte // decoded signature
	scratch []byte // scratchSize bytes for verifySignature
	payload string // decoded claims set (JSON), retained by Claims
}

// splitCompact returns the positions of the two dots of a compact JWS
// (RFC 7515 §7.1), refusing any other number of dots, which rules out
// five-segment JWE (RFC 7516 §7.1), and line breaks, which encoding/base64
// would skip. Every other byte outside the base64url alphabet, including
// "=" and the JSON serialization's "{", is refused by the strict decoder.
func splitCompact(raw string) (d1, d2 int, ok bool) {
	d1 = strings.IndexByte(raw, '.')
	if d1 < 0 {
		return 0, 0, false
	}
	d2 = strings.IndexByte(raw[d1+1:], '.')
	if d2 < 0 {
		return 0, 0, false
	}
	d2 += d1 + 1
	if strings.IndexByte(raw[d2+1:], '.') >= 0 || strings.IndexByte(raw, '\n') >= 0 || strings.IndexByte(raw, '\r') >= 0 {
		return 0, 0, false
	}
	return d1, d2, true
}

// parse splits and decodes raw into tok and reads its header, without
// verifying the signature.
func (v *Validator) parse(raw string, tok *token) error {
	d1, d2, ok := splitCompact(raw)
	if !ok || d1 == 0 || d2 == d1+1 {
		return errSegments
	}
	hl := b64.DecodedLen(d1)
	pl := b64.DecodedLen(d2 - d1 - 1)
	sl := b64.DecodedLen(len(raw) - d2 - 1)
	// One allocation: a copy of raw (whose prefix is the signing input),
	// the three decoded segments, and scratch space for verification.
	n := len(raw)
	buf := make([]byte, n+hl+pl+sl+scratchSize)
	copy(buf, raw)
	tok.scratch = buf[n+hl+pl+sl:]
	tok.input = buf[:d2:d2]
	hdr, err := decodeSegment(buf[n:n+hl], buf[:d1])
	if err != nil {
		return err
	}
	pay, err := decodeSegment(buf[n+hl:n+hl+pl], buf[d1+1:d2])
	if err != nil {
		return err
	}
	if tok.sig, err = decodeSegment(buf[n+hl+pl:n+hl+pl+sl], buf[d2+1:n]); err != nil {
		return err
	}
	if !validJSON(hdr) {
		return errHeaderJSON
	}
	if err := v.readHeader(string(hdr), &tok.header); err != nil {
		return err
	}
	if !validJSON(pay) {
		return errPayloadJSON
	}
	tok.payload = string(pay)
	return nil
}

func decodeSegment(dst, src []byte) ([]byte, error) {
	n, err := b64.Decode(dst, src)
	if err != nil {
		return nil, errBase64
	}
	return dst[:n], nil
}

// readHeader reads alg, typ, kid and the forbidden parameters from the
// JOSE header hs, in this order of checks: structure (ErrMalformed), alg
// (ErrUnsupportedAlgorithm), forbidden parameters and cty (ErrType), typ
// (ErrType), kid (ErrKeyNotFound).
func (v *Validator) readHeader(hs string, h *header) error {
	var alg, typ string
	var hasTyp, forbidden, cty bool
	var err error
	n := 0
	it := iterMembers(hs)
	for m, ok := it.next(); ok; m, ok = it.next() {
		if n++; n > maxHeaderParams {
			return errHeaderSize
		}
		switch m.name {
		case "alg":
			if alg, err = headerString(m.value); err != nil {
				return err
			}
		case "typ":
			if typ, err = headerString(m.value); err != nil {
				return err
			}
			hasTyp = true
		case "kid":
			if h.kid, err = headerString(m.value); err != nil {
				return err
			}
			h.hasKID = h.kid != ""
		case "cty":
			cty = true
		case "crit", "b64", "jku", "x5u", "jwk", "x5c":
			// Never a trust source, never fetched, and no extension is
			// understood (RFC 7515 §4.1.11, RFC 7797, RFC 8725 §3.10).
			forbidden = true
		}
	}
	if it.err != nil {
		return it.err
	}
	if err := uniqueNames(hs, v.seed); err != nil {
		return err
	}
	if alg == "" {
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
	if !h.hasKID && !v.cfg.AllowMissingKID {
		return errNoKID
	}
	return nil
}

func headerString(v string) (string, error) {
	s, ok := jsonString(v)
	if !ok {
		return "", errHeaderType
	}
	return s, nil
}

// allowedAlg returns the spec of alg if it is in the allow-list.
func (v *Validator) allowedAlg(alg string) *algSpec {
	for i := range v.algs {
		if string(v.algs[i].name) == alg {
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
