package jws

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the JWS verifier uses the standard library's crypto and
// go-jose's key type only (docs/DESIGN.md).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{"github.com/go-jose/go-jose/v4/..."},
		BadDeps: map[string]string{"net/http": "no I/O in signature checks"},
	}.Check(t, ".")
}
