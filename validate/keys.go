package validate

import (
	"context"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// KeySource supplies an issuer's verification keys. It is the one method
// [Validator] needs from a key store; validate/jwks implements it over a
// remote JWKS (RFC 7517) with discovery, refresh and rate limiting.
type KeySource interface {
	// Keys returns the usable public verification keys published under kid.
	// An unknown kid returns an error wrapping [Error] "unknown_key". When no key
	// set could be obtained at all, it returns an error wrapping
	// [ErrKeysUnavailable]. Implementations must not block longer than their
	// own bounded wait, and must honour ctx.
	//
	// kid is empty when the token has no "kid" (RFC 7515 §4.1.4 makes it
	// optional; Config.RequireKID refuses such tokens before any lookup);
	// the source then returns every key it serves, published with or
	// without a kid. [Validator] filters what is returned (type, size, curve,
	// "use", "alg", kid), so a source need not, and never modifies the
	// returned slice, so a source may return its own storage.
	//
	// Errors must not quote kid: it is an unverified token value. Errors
	// wrapping Error "unknown_key" are replaced by a bare Error "unknown_key"; errors
	// wrapping ErrKeysUnavailable are returned as they are, and any other
	// error is wrapped in ErrKeysUnavailable; both may reach logs.
	Keys(ctx context.Context, kid string) ([]jose.JSONWebKey, error)
}

// keyRefresher is implemented by key sources that can refresh on demand
// (validate/jwks.Source does). When a signature fails under a known kid,
// [Validator] calls Refresh once (some authorization servers re-key under
// an unchanged kid) and retries. The implementation rate-limits refreshes;
// a refused refresh returns at once. A [KeySource] of its own gets this by
// having the method Refresh(ctx context.Context) error.
type keyRefresher interface {
	Refresh(ctx context.Context) error
}

// StaticKeys is a fixed key set, for tests and for deployments that pin keys.
type StaticKeys struct {
	// Set holds the public verification keys. A key is tried for tokens
	// whose kid equals its KeyID and for tokens without a kid.
	Set []jose.JSONWebKey
}

var _ KeySource = (*StaticKeys)(nil)

// Keys returns the keys of s whose KeyID equals kid; for an empty kid (a
// token without one), it returns every key of s.
// The result may share memory with s.Set; callers must not modify it.
func (s *StaticKeys) Keys(_ context.Context, kid string) ([]jose.JSONWebKey, error) {
	if kid == "" && len(s.Set) > 0 {
		return s.Set[:len(s.Set):len(s.Set)], nil
	}
	first, n := -1, 0
	for i := range s.Set {
		if s.Set[i].KeyID == kid {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	switch n {
	case 0:
		return nil, fmt.Errorf("%w", errKeyNotFound)
	case 1: // the common case, without allocating
		return s.Set[first : first+1 : first+1], nil
	}
	out := make([]jose.JSONWebKey, 0, n)
	for _, k := range s.Set[first:] {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out, nil
}
