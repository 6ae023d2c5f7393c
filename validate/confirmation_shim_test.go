package validate

// SHIM test: dropped at merge with confirmation_shim.go.

import (
	"context"
	"errors"
	"testing"
)

func TestConfirmationShim(t *testing.T) {
	k := keys(t).es256
	bound := mint(t, k, with("cnf", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}))
	if _, err := newTestValidator(t, nil).Validate(context.Background(), bound); !errors.Is(err, ErrSenderConstrained) {
		t.Fatalf("default: err = %v, want ErrSenderConstrained", err)
	}
	v := newTestValidator(t, func(c *Config) { c.AllowConfirmation = true; c.CacheSize = 0 })
	for i := range 2 { // the second is a cache hit
		c, err := v.Validate(context.Background(), bound)
		if err != nil || c.Confirmation == nil || c.Confirmation.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
			t.Fatalf("round %d: %+v, %v", i, c, err)
		}
		c.Confirmation.JKT = "changed" // must not reach the cache
	}
	c, err := v.Validate(context.Background(), mint(t, k, baseClaims()))
	if err != nil || c.Confirmation != nil {
		t.Fatalf("unbound: %+v, %v", c, err)
	}
	if _, err := v.Validate(context.Background(), mint(t, k, with("cnf", "x"))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("cnf string: err = %v, want ErrMalformed", err)
	}
}
