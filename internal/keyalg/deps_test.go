package keyalg

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library's crypto and go-jose's algorithm names.
func TestDeps(t *testing.T) {
	deptest.DepChecker{Allowed: []string{"github.com/go-jose/go-jose/v4/..."}}.Check(t, ".")
}
