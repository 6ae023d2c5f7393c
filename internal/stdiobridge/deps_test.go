package stdiobridge

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the place of stdiobridge in docs/DESIGN.md: it reads
// the children's output with internal/strictjson only and knows nothing
// of the middleware (the proxy tells it who the user is) or of any MCP
// SDK (its tests use go-sdk as a real server and client).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/internal/strictjson",
			deptest.Module + "/internal/mcprev",
			"github.com/go-json-experiment/json/...",
			"golang.org/x/time/rate",
		},
	}.Check(t, ".")
	deptest.CheckNotImported(t, deptest.Module+"/internal/stdiobridge", deptest.Module+"/proxy")
}
