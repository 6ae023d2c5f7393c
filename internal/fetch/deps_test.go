package fetch

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: internal/fetch is a
// leaf that imports the standard library and code.dny.dev/ssrf only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{Allowed: []string{"code.dny.dev/ssrf"}}.Check(t, ".")
}
