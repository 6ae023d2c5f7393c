package fairlru

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: fairlru is a leaf (standard library only).
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
