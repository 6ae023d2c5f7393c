package devas_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces docs/DESIGN.md: devas imports only the standard
// library, cimd, asmeta, prm and go-jose; never middleware or validate.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	const pkg = "github.com/mcpguard/mcpguard/devas"
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list: %s", err.Error())
	}
	allowed := []string{
		"github.com/mcpguard/mcpguard/cimd",
		"github.com/mcpguard/mcpguard/asmeta",
		"github.com/mcpguard/mcpguard/prm",
		"github.com/go-jose/go-jose/v4",
	}
	for _, imp := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(imp, "/")
		if !strings.Contains(first, ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || imp == a || strings.HasPrefix(imp, a+"/")
		}
		if !ok {
			t.Errorf("devas imports %s directly; allowed: stdlib, %v", imp, allowed)
		}
	}

	out, err = exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps: %s", err.Error())
	}
	bad := map[string]string{
		"github.com/mcpguard/mcpguard/middleware":    "devas is an edge; middleware must stay independent of it",
		"github.com/mcpguard/mcpguard/validate":      "the AS must not depend on the RS validator",
		"github.com/mcpguard/mcpguard/authtest":      "test support is not for production imports",
		"github.com/modelcontextprotocol/go-sdk/mcp": "only tests use the SDK",
		"testing": "devas is importable by non-test code",
	}
	for _, dep := range strings.Fields(string(out)) {
		if why, ok := bad[dep]; ok {
			t.Errorf("devas depends on %s: forbidden because %s", dep, why)
		}
	}
}
