package gosdk

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the row of docs/DESIGN.md: gosdk imports middleware
// and the official MCP Go SDK, and nothing else of this module; nothing
// below it (middleware, validate, the leaves) imports it.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/middleware",
			"github.com/modelcontextprotocol/go-sdk/...",
		},
	}.Check(t, ".")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			deptest.Module + "/validate/jwks": "an adapter never pulls in key sources",
			deptest.Module + "/cimd":          "an adapter never pulls in CIMD",
			"github.com/mark3labs/mcp-go/...": "one SDK per adapter",
		},
	}.Check(t, ".")
	for _, pkg := range []string{"middleware", "validate", "challenge", "prm"} {
		deptest.DepChecker{
			AllowUnlisted: true,
			BadDeps:       map[string]string{"github.com/modelcontextprotocol/go-sdk/...": "the go-sdk stays in gosdk"},
		}.Check(t, deptest.Module+"/"+pkg)
	}
}
