package middleware

import (
	"errors"
	"fmt"
)

// maxActorDepth bounds the "act" chain [Principal.Actors] reads.
const maxActorDepth = 8

// errActorClaim is the cause of a malformed "act" claim.
var errActorClaim = errors.New("middleware: malformed act claim")

// Actor is one party of a token's actor chain (RFC 8693 §4.1 "act"): a
// party the subject delegated to, such as an agent acting for a user
// after a token exchange.
type Actor struct {
	// Subject is the actor's "sub".
	Subject string
	// Issuer is the actor's "iss", if the claim names one.
	Issuer string
}

// actClaim is an RFC 8693 §4.1 "act" object; a nested "act" names the
// prior actor.
type actClaim struct {
	Subject string    `json:"sub"`
	Issuer  string    `json:"iss"`
	Act     *actClaim `json:"act"`
}

// Actors returns the token's actor chain: the current actor first, then
// each prior actor (the nested "act" members, RFC 8693 §4.1), or nil when
// the token has no "act" claim or the principal is anonymous. The claim
// is read from the verified claims on each call (nothing on the request
// path pays for it); one that is not an object with a "sub" at every
// level, or that nests more than 8 actors, is an error wrapping
// errActorClaim. Only the subject (and issuer) are read; RFC 8693 says
// the prior actors are informational: the current actor is the one
// authorization decisions may consider.
func (p *Principal) Actors() ([]Actor, error) {
	if p == nil || p.Claims == nil {
		return nil, nil
	}
	var c struct {
		Act *actClaim `json:"act"`
	}
	if err := p.Claims.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %w", errActorClaim, err)
	}
	var out []Actor
	for a := c.Act; a != nil; a = a.Act {
		if len(out) == maxActorDepth {
			return nil, fmt.Errorf("%w: more than %d actors", errActorClaim, maxActorDepth)
		}
		if a.Subject == "" {
			return nil, fmt.Errorf("%w: an actor without sub", errActorClaim)
		}
		out = append(out, Actor{Subject: a.Subject, Issuer: a.Issuer})
	}
	return out, nil
}
