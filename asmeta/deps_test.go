package asmeta

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: asmeta imports the
// standard library, internal/fetch (with its SSRF guard) and
// internal/strictjson (the one JSON reader) only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{deptest.Module + "/internal/fetch", "code.dny.dev/ssrf",
			deptest.Module + "/internal/strictjson", "github.com/go-json-experiment/json/..."},
	}.Check(t, ".")
}
