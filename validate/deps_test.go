package validate

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: validate imports only
// the standard library (never net/http) and go-jose.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", "github.com/mcpguard/mcpguard/validate").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	bad := map[string]string{
		"net/http":                         "no HTTP in token checking; key I/O is behind KeySource",
		"github.com/golang-jwt/jwt/v5":     "tokens are verified with go-jose only",
		"github.com/MicahParks/keyfunc/v3": "belongs in validate/jwks",
		"github.com/MicahParks/jwkset":     "belongs in validate/jwks",
	}
	for _, pkg := range strings.Fields(string(out)) {
		if why, ok := bad[pkg]; ok {
			t.Errorf("validate depends on %s: %s", pkg, why)
			continue
		}
		first, _, _ := strings.Cut(pkg, "/")
		switch {
		case !strings.Contains(first, "."): // standard library
		case pkg == "github.com/mcpguard/mcpguard/validate":
		case pkg == "github.com/go-jose/go-jose/v4" || strings.HasPrefix(pkg, "github.com/go-jose/go-jose/v4/"):
		default:
			t.Errorf("validate depends on %s: only the standard library and go-jose are allowed", pkg)
		}
	}
}
