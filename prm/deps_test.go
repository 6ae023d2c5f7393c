package prm

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps fails if the package imports anything outside the standard
// library (DESIGN.md layering: prm is a leaf).
func TestDeps(t *testing.T) {
	deptest.DepChecker{Allowed: []string{deptest.Module + "/internal/scopetoken"}}.Check(t, ".") // stdlib-only scope grammar
}
