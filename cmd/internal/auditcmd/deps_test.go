package auditcmd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the subcommand is flag parsing and output around the engine.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/cmd/internal/audit"},
	}.Check(t, ".")
}
