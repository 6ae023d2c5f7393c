package versioncmd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{Direct: true}.Check(t, ".")
}
