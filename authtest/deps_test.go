package authtest_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: authtest is imported by
// the tests of validate, validate/jwks and middleware, so it must not import
// them (STYLE.md rule 15).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			deptest.Module + "/validate":      "validate's tests import authtest",
			deptest.Module + "/validate/jwks": "validate/jwks's tests import authtest",
			deptest.Module + "/middleware":    "middleware's tests import authtest",
		},
	}.Check(t, ".")
}
