package middleware

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering of docs/DESIGN.md: middleware imports the
// standard library, validate, challenge and prm, and go-jose only through
// validate. Never cimd, authtest, internal/fetch, validate/jwks, or any
// other third-party module (go list -deps covers non-test files only).
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %s", err.Error())
	}
	allowed := map[string]bool{
		"github.com/mcpguard/mcpguard/middleware": true,
		"github.com/mcpguard/mcpguard/validate":   true,
		"github.com/mcpguard/mcpguard/challenge":  true,
		"github.com/mcpguard/mcpguard/prm":        true,
	}
	const jose = "github.com/go-jose/go-jose/v4"
	for _, p := range strings.Fields(string(out)) {
		switch {
		case allowed[p]:
		case p == jose || strings.HasPrefix(p, jose+"/"):
			// pulled in by validate (jose.JSONWebKey in its API)
		default:
			t.Errorf("forbidden dependency %s: middleware may import only the standard library, validate, challenge and prm", p)
		}
	}
	// Direct imports: go-jose must come through validate, not be imported here.
	direct, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %s", err.Error())
	}
	for _, p := range strings.Fields(string(direct)) {
		if strings.HasPrefix(p, jose) || p == "testing" {
			t.Errorf("middleware imports %s directly", p)
		}
	}
}
