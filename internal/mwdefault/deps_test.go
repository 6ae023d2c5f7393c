package mwdefault

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: mwdefault is constants only, imported by middleware (core): the
// standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
