package validate

import (
	"context"
	"time"
)

// CacheUse says whether the verified-token cache answered a Validate call.
type CacheUse uint8

const (
	// CacheOff: caching is disabled (Config.CacheSize < 0).
	CacheOff CacheUse = iota
	// CacheMiss: the token was verified in full (and cached on success).
	CacheMiss
	// CacheHit: the cache answered, after re-checking the token's times
	// and that its key is still published.
	CacheHit
)

// String returns "off", "miss" or "hit".
func (u CacheUse) String() string {
	switch u {
	case CacheMiss:
		return "miss"
	case CacheHit:
		return "hit"
	}
	return "off"
}

// Observation describes one finished [Validator.Validate] call, as
// Config.Observer receives it. It holds no token, claim or key material.
type Observation struct {
	// Cache says whether the verified-token cache answered.
	Cache CacheUse
	// Duration is the wall time of the call.
	Duration time.Duration
	// Err is the call's error, nil on success; it wraps one sentinel of
	// this package.
	Err error
}

// observed runs Validate and reports it to Config.Observer.
func (v *Validator) observed(ctx context.Context, raw string) (*Claims, error) {
	start := time.Now()
	var hit bool
	c, err := v.validate(ctx, raw, &hit)
	o := Observation{Cache: CacheOff, Duration: time.Since(start), Err: err}
	switch {
	case v.cache == nil:
	case hit:
		o.Cache = CacheHit
	default:
		o.Cache = CacheMiss
	}
	v.cfg.Observer(ctx, o)
	return c, err
}
