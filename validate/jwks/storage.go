package jwks

import (
	"context"
	"fmt"

	"github.com/MicahParks/jwkset"
	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
)

var _ validate.KeySource = (*storageSource)(nil)

// FromStorage adapts a jwkset.Storage to [validate.KeySource], for
// deployments that already run keyfunc v3 or jwkset: pass k.Storage() of a
// keyfunc.Keyfunc. A nil st yields a source that always reports
// [validate.ErrKeysUnavailable].
//
// The source reads the storage with KeyReadAll, which does no I/O, and never with
// KeyRead: jwkset's HTTP storage answers KeyRead for an unknown kid by
// waiting on its RefreshUnknownKID rate limiter, which can block for up to a
// minute. Refreshing is left to the storage's own background goroutine, so
// an unknown kid fails at once with [validate.Error] "unknown_key". The keys are
// converted and filtered on every call exactly as [Source] filters fetched
// keys (see the package documentation); a key_ops member that is present
// but empty cannot be told from an absent one here and counts as absent.
//
// Prefer [Source]: it serves hits from an immutable snapshot without
// allocating, and it refreshes on unknown kids with a bounded wait.
func FromStorage(st jwkset.Storage) validate.KeySource {
	return &storageSource{st: st}
}

// storageSource is the [validate.KeySource] of [FromStorage].
type storageSource struct {
	st jwkset.Storage
}

// Keys returns the usable keys in the storage whose kid equals kid; for the
// empty kid (a token without one), every usable key, with or without a
// kid. If the
// storage holds no usable key at all, or cannot be read, the error wraps
// [validate.ErrKeysUnavailable]; otherwise a missing kid wraps
// [validate.Error] "unknown_key".
func (s *storageSource) Keys(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	if s.st == nil {
		return nil, fmt.Errorf("%w: no storage", validate.ErrKeysUnavailable)
	}
	all, err := s.st.KeyReadAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", validate.ErrKeysUnavailable, err)
	}
	var out []jose.JSONWebKey
	usable := 0
	for _, j := range all {
		m := j.Marshal()
		c := candidate{kid: m.KID, use: string(m.USE), alg: string(m.ALG), key: j.Key(), certs: j.X509().X5C}
		if len(m.KEYOPS) > 0 {
			c.hasOps = true
			for _, o := range m.KEYOPS {
				c.ops = append(c.ops, string(o))
			}
		}
		k, d := c.filter()
		if d != nil {
			continue
		}
		usable++
		if kid == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case usable == 0:
		return nil, fmt.Errorf("%w: storage holds no usable key", validate.ErrKeysUnavailable)
	}
	return nil, validate.Error{Reason: "unknown_key"}
}
