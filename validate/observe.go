package validate

import (
	"context"
	"time"
)

// Observation describes one finished [Validator.Validate] call, as
// Config.Observer receives it. It holds no token, claim or key material.
type Observation struct {
	// Cache says whether the verified-token cache answered: "hit" (the
	// cache answered, after re-checking the token's times and that its key
	// is still published), "miss" (the token was verified in full, and
	// cached on success) or "off" (caching is disabled, Config.CacheSize
	// < 0).
	Cache string
	// Duration is the wall time of the call.
	Duration time.Duration
	// Err is the call's error, nil on success; it wraps an [Error],
	// [ErrKeysUnavailable] or a context error.
	Err error
}

// observed runs Validate and reports it to Config.Observer.
func (v *Validator) observed(ctx context.Context, raw string) (*Claims, error) {
	start := time.Now()
	var hit bool
	c, err := v.validate(ctx, raw, &hit)
	o := Observation{Cache: "off", Duration: time.Since(start), Err: err}
	switch {
	case v.cache == nil:
	case hit:
		o.Cache = "hit"
	default:
		o.Cache = "miss"
	}
	v.cfg.Observer(ctx, o)
	return c, err
}
