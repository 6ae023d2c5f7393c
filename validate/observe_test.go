package validate

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestObserver: every Validate call is reported once, with the cache use
// and the error; nil Observer adds no allocation to a cache hit.
func TestObserver(t *testing.T) {
	k := keys(t)
	var got []Observation
	obs := func(_ context.Context, o Observation) { got = append(got, o) }
	v := newTestValidator(t, func(c *Config) { c.CacheSize = 8; c.Observer = obs })
	tok := mint(t, k.es256, baseClaims())
	for range 2 {
		if _, err := v.Validate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	bad := mint(t, k.es256, with("exp", testNow.Add(-time.Hour).Unix()))
	_, _ = v.Validate(t.Context(), bad)
	if len(got) != 3 || got[0].Cache != "miss" || got[1].Cache != "hit" || got[2].Cache != "miss" ||
		got[0].Err != nil || !errors.Is(got[2].Err, errExpired) || got[0].Duration <= 0 {
		t.Errorf("observations = %+v", got)
	}
	off := newTestValidator(t, func(c *Config) { c.Observer = obs })
	got = nil
	_, _ = off.Validate(t.Context(), tok)
	if len(got) != 1 || got[0].Cache != "off" {
		t.Errorf("cache off: %+v", got)
	}

	// The observed path itself allocates nothing beyond Validate's own.
	plain := newTestValidator(t, func(c *Config) { c.CacheSize = 8 })
	withObs := newTestValidator(t, func(c *Config) { c.CacheSize = 8; c.Observer = func(context.Context, Observation) {} })
	ctx := context.Background()
	_, _ = plain.Validate(ctx, tok)
	_, _ = withObs.Validate(ctx, tok)
	a := testing.AllocsPerRun(50, func() { _, _ = plain.Validate(ctx, tok) })
	b := testing.AllocsPerRun(50, func() { _, _ = withObs.Validate(ctx, tok) })
	if b != a {
		t.Errorf("cache hit allocates %v with an Observer, %v without", b, a)
	}
}
