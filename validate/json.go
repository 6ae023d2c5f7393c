package validate

import (
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jws"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// This file is the glue between this package and internal/strictjson, the
// module's one JSON reader (go-json-experiment/json). No JSON is scanned
// here: header, claims set and "cnf" are read with strictjson.MemberSpans,
// which applies the module's strictness policy (one value, valid UTF-8,
// no duplicate names at any depth, no two top-level names equal under
// case folding), and member values are decoded with strictjson.String and
// strictjson.Strings. Only what this package checks is decoded.

// Wrapped errors for JSON structure, one per class of the policy.
var (
	errNotObject       = fmt.Errorf("%w: not a JSON object", errMalformed)
	errMalformedJSON   = fmt.Errorf("%w: invalid JSON", errMalformed)
	errInvalidUTF8     = fmt.Errorf("%w: invalid UTF-8", errMalformed)
	errDuplicateMember = fmt.Errorf("%w: duplicate member name", errMalformed)
	errCaseVariant     = fmt.Errorf("%w: case-variant member name", errMalformed)
)

// jsonErr maps an error of strictjson to this package's wrapped errors,
// and passes any other error (returned by a member callback) unchanged.
func jsonErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrNotObject):
		return errNotObject
	case errors.Is(err, strictjson.ErrSyntax):
		return errMalformedJSON
	case errors.Is(err, strictjson.ErrInvalidUTF8):
		return errInvalidUTF8
	case errors.Is(err, strictjson.ErrDuplicateName):
		return errDuplicateMember
	case errors.Is(err, strictjson.ErrCaseVariant):
		return errCaseVariant
	}
	return err
}

// readObject reads the members of the JSON object doc, whose bytes are
// also held as the string s, calling fn with each member's name and raw
// value as a sub-string of s (no copy). p, if not nil, lends the
// tokenizer's buffers.
// read lists the names the caller reads, whose case variants are refused.
func readObject(p *strictjson.Pool, doc []byte, s string, read []string, fn func(name []byte, value string) error) error {
	spans := func(name []byte, start, end int) error { return fn(name, s[start:end]) }
	if p == nil {
		return jsonErr(strictjson.MemberSpans(doc, read, spans))
	}
	return jsonErr(p.MemberSpans(doc, read, spans))
}

// headerNames are the JOSE header parameters readHeader reads.
func headerNames() []string {
	return []string{"alg", "typ", "kid", "cty", "crit", "b64", "jku", "x5u", "jwk", "x5c"}
}

// claimNames are the claims collect reads, with Config.TenantClaim.
func claimNames(tenant string) []string {
	names := []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "azp", "scope", "scp", "cnf"}
	if tenant != "" {
		names = append(names, tenant)
	}
	return names
}

// parseConfirmation implements ParseConfirmation.
func parseConfirmation(raw string) (*Confirmation, error) {
	var jkt string
	var hasJKT, badJKT, other bool
	err := readObject(nil, []byte(raw), raw, []string{"jkt"}, func(name []byte, value string) error {
		if string(name) != "jkt" {
			other = true
			return nil
		}
		jkt, hasJKT = strictjson.String(value)
		badJKT = !hasJKT
		return nil
	})
	switch {
	case errors.Is(err, errNotObject):
		return nil, errConfirmationType
	case err != nil:
		return nil, err
	case other:
		return nil, errConfirmationMethod
	case badJKT || !hasJKT || jkt == "":
		return nil, errConfirmationJKT
	}
	if _, err := jws.Encoding.DecodeString(jkt); err != nil {
		return nil, errConfirmationJKT
	}
	return &Confirmation{JKT: jkt}, nil
}
