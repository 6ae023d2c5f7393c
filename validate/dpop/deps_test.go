package dpop

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces docs/DESIGN.md: dpop is core, like validate: the
// standard library (never net/http), go-jose, and go-json-experiment
// through internal/strictjson only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			"github.com/go-jose/go-jose/v4/...",
			"github.com/mcpguard/mcpguard/internal/strictjson",
			"github.com/mcpguard/mcpguard/internal/jws", // the one JWS verifier
			"github.com/mcpguard/mcpguard/internal/fairlru",
			"github.com/go-json-experiment/json/...", // through internal/strictjson
		},
		BadDeps: map[string]string{
			"net/http":                   "no HTTP in proof checking; the caller passes method, URI and headers",
			deptest.Module + "/validate": "proof checking is independent of token validation",
		},
	}.Check(t, ".")
}
