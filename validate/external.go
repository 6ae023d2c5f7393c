package validate

import (
	"errors"
	"github.com/mcpguard/mcpguard/internal/jws"
	"slices"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// This file holds the exported helpers for validators that live outside
// this package, such as validate/introspect (RFC 7662), and for code that
// routes a token to one of several validators.

// NewClaims returns a copy of c whose [Claims.Decode] unmarshals
// claimsJSON. It is meant for validators outside this package, such as
// token introspection (RFC 7662 §2.2), that obtained a claims set over a
// trusted, authenticated channel and have already checked the members
// they copied into c. NewClaims checks nothing itself: the caller vouches
// for both c and claimsJSON. claimsJSON is copied, and so are c.Audience
// and c.Scopes, so the result shares no mutable memory with the arguments.
// If claimsJSON is nil, Decode returns an encoding/json error, as it does
// for a Claims built by hand.
func NewClaims(c Claims, claimsJSON []byte) *Claims {
	c.Audience = slices.Clone(c.Audience)
	c.Scopes = slices.Clone(c.Scopes)
	c.payload = string(claimsJSON)
	return &c
}

// Trusts reports whether raw looks like a JWT that v is responsible for: a
// compact JWS (RFC 7515 §7.1) with three dot-separated segments, whose
// first segment decodes to a JSON object with an "alg" member, and whose
// second decodes to a JSON object with an "iss" member (RFC 7519 §4.1.1)
// equal to one of the configured issuers. The signature segment may be
// empty (an unsecured JWT still names its issuer). Tokens longer than
// Config.MaxTokenBytes are not trusted. A header or claims set that is a
// JSON object except for repeated names or names equal under case folding
// counts as naming a trusted issuer (whichever its "iss" members say), so
// that such an ambiguous token is refused by Validate rather than routed
// elsewhere.
//
// Trusts verifies nothing: no signature, no claim, no "alg" allow-list,
// and the "iss" it reads is unverified. It is a cheap routing decision
// for callers that accept both JWTs and other tokens (see
// validate/introspect.Hybrid): a token for which Trusts is true must be
// validated with [Validator.Validate] and nothing else, so that a forged
// or expired token naming a trusted issuer is refused rather than handed
// to a more lenient path. It allocates once, about twice the size of the
// header and claims set.
func (v *Validator) Trusts(raw string) bool {
	if raw == "" || len(raw) > v.cfg.MaxTokenBytes {
		return false
	}
	d1, d2, ok := jws.Split(raw)
	if !ok || d1 == 0 || d2 == d1+1 {
		return false
	}
	// The encoded header and claims set, then room for both decoded.
	hl := jws.Encoding.DecodedLen(d1)
	buf := make([]byte, d2+hl+jws.Encoding.DecodedLen(d2-d1-1))
	copy(buf, raw[:d2])
	hdr, err := decodeSegment(buf[d2:d2+hl], buf[:d1])
	if err != nil {
		return false
	}
	pay, err := decodeSegment(buf[d2+hl:], buf[d1+1:d2])
	if err != nil {
		return false
	}
	hasAlg := false
	err = v.json.Members(hdr, v.headerNames, func(name, _ []byte) error {
		hasAlg = hasAlg || string(name) == "alg"
		return nil
	})
	switch {
	case ambiguous(err):
	case err != nil || !hasAlg:
		return false
	}
	trusted := false
	err = v.json.Members(pay, v.claimNames, func(name, value []byte) error {
		if string(name) == "iss" {
			iss, ok := strictjson.String(value)
			trusted = ok && v.issuers[iss] != nil
		}
		return nil
	})
	return ambiguous(err) || (err == nil && trusted)
}

// ambiguous reports whether err is strictjson's refusal of a well-formed
// object whose member names repeat, exactly or under case folding.
func ambiguous(err error) bool {
	return errors.Is(err, strictjson.ErrDuplicateName) || errors.Is(err, strictjson.ErrCaseVariant)
}
