package clientrecord

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library only, since cimd imports it.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
