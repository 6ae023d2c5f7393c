package golden

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: golden is imported by the tests of leaf packages, so it imports
// the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
