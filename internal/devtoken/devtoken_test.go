package devtoken

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: devtoken is a leaf under devas and internal/devmint.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/internal/scopetoken",
			"github.com/go-jose/go-jose/v4/...",
		},
	}.Check(t, ".")
}
