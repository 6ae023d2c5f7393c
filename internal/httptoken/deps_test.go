package httptoken

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library only (challenge, a leaf, imports it).
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
