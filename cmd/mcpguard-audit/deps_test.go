package main

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the command is flag parsing and output around internal/audit.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/internal/audit"},
	}.Check(t, ".")
}
