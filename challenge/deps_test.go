package challenge

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps fails if the package imports anything outside the standard
// library (DESIGN.md layering: challenge is a leaf) except the stdlib-only
// scope and token grammars.
func TestDeps(t *testing.T) {
	deptest.DepChecker{Allowed: []string{deptest.Module + "/internal/scopetoken", deptest.Module + "/internal/httptoken"}}.Check(t, ".")
}
