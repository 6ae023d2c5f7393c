package main

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the binary is a table of subcommands, each in its own package
// under cmd/internal.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/cmd/internal/..."},
	}.Check(t, ".")
}
