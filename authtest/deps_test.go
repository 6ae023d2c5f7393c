package authtest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: authtest is imported by
// the tests of validate, validate/jwks and middleware, so it must not import
// them (STYLE.md rule 15).
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}",
		"github.com/mcpguard/mcpguard/authtest").Output()
	if err != nil {
		t.Fatalf("go list: %s", err.Error())
	}
	bad := map[string]string{
		"github.com/mcpguard/mcpguard/validate":      "validate's tests import authtest",
		"github.com/mcpguard/mcpguard/validate/jwks": "validate/jwks's tests import authtest",
		"github.com/mcpguard/mcpguard/middleware":    "middleware's tests import authtest",
	}
	for _, dep := range strings.Fields(string(out)) {
		if why, ok := bad[dep]; ok {
			t.Errorf("authtest depends on %s: forbidden because %s", dep, why)
		}
	}
}
