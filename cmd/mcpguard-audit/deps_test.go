package main

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the alias is "mcpguard audit" under its old name.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/cmd/internal/auditcmd"},
	}.Check(t, ".")
}
