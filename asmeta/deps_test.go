package asmeta

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: asmeta imports the
// standard library and internal/fetch (with its SSRF guard) only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{deptest.Module + "/internal/fetch", "code.dny.dev/ssrf"},
	}.Check(t, ".")
}
