package mcpgo

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the row of docs/DESIGN.md: mcpgo imports middleware
// and mcp-go, and nothing else of this module; nothing below it imports
// mcp-go.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/middleware",
			"github.com/mark3labs/mcp-go/...",
		},
	}.Check(t, ".")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			"github.com/modelcontextprotocol/go-sdk/...": "one SDK per adapter",
			deptest.Module + "/validate/jwks":            "an adapter never pulls in key sources",
		},
	}.Check(t, ".")
	for _, pkg := range []string{"middleware", "validate", "challenge", "prm"} {
		deptest.DepChecker{
			AllowUnlisted: true,
			BadDeps:       map[string]string{"github.com/mark3labs/mcp-go/...": "mcp-go stays in mcpgo"},
		}.Check(t, deptest.Module+"/"+pkg)
	}
}
