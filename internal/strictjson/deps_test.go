package strictjson

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: strictjson is a leaf
// over go-json-experiment/json and the standard library, so that validate
// (no net/http), cimd, middleware and validate/introspect can all import
// it.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{"github.com/go-json-experiment/json/..."},
		BadDeps: map[string]string{"net/http": "validate imports strictjson and must not link net/http"},
	}.Check(t, ".")
}
