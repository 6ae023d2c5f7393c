package mcpguard

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the place of the root package in docs/DESIGN.md: it
// sits on top of the layering, importing only validate, validate/jwks,
// middleware and prm (and the standard library) directly, and nothing in
// the module's non-test code imports it except examples and otelguard.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/validate",
			deptest.Module + "/validate/jwks",
			deptest.Module + "/middleware",
			deptest.Module + "/prm",
		},
	}.Check(t, ".")
	// Integration holds tests only.
	// otelguard sits above it: its Instrument and Mount take a Config and a Guard;
	// proxy builds a Guard per route.
	deptest.CheckNotImported(t, deptest.Module, deptest.Module+"/examples/...", deptest.Module+"/integration/...", deptest.Module+"/otelguard", deptest.Module+"/proxy")
}
