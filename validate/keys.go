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
	// An unknown kid returns an error wrapping [ErrKeyNotFound]. When no key
	// set could be obtained at all, it returns an error wrapping
	// [ErrKeysUnavailable]. Implementations must not block longer than their
	// own bounded wait, and must honour ctx.
	Keys(ctx context.Context, kid string) ([]jose.JSONWebKey, error)
}

// Refresher is implemented by key sources that can refresh on demand. When a
// signature fails under a known kid, [Validator] calls Refresh once (some
// authorization servers re-key under an unchanged kid) and retries. The
// implementation rate-limits refreshes; a refused refresh returns at once.
type Refresher interface {
	Refresh(ctx context.Context) error
}

// StaticKeys is a fixed key set, for tests and for deployments that pin keys.
type StaticKeys struct {
	// Set holds the public verification keys. Keys without a kid are never
	// selected.
	Set []jose.JSONWebKey
}

var _ KeySource = (*StaticKeys)(nil)

// Keys returns the keys of s whose KeyID equals kid.
func (s *StaticKeys) Keys(_ context.Context, kid string) ([]jose.JSONWebKey, error) {
	var out []jose.JSONWebKey
	for _, k := range s.Set {
		if k.KeyID == kid && kid != "" {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w", ErrKeyNotFound)
	}
	return out, nil
}
