package proxycmd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the subcommand is flag parsing around the proxy engine, with
// the development authorization server for a local trial.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/proxy", deptest.Module + "/devas"},
	}.Check(t, ".")
}
