package answer

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the place of answer in docs/DESIGN.md: it reads
// answers with internal/strictjson only, and knows nothing of the
// middleware or of any SDK, so that the middleware, the SDK adapters and
// the proxy can all use it.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/internal/strictjson",
			"github.com/go-json-experiment/json/...",
		},
	}.Check(t, ".")
}
