package introspect_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: validate/introspect
// imports validate, asmeta, internal/fetch, go-jose, x/oauth2 and x/sync,
// and never middleware (which imports validate: the dependency runs the
// other way, through middleware.TokenValidator).
func TestDeps(t *testing.T) {
	const pkg = "github.com/mcpguard/mcpguard/validate/introspect"
	allowed := []string{
		"github.com/mcpguard/mcpguard/validate",
		"github.com/mcpguard/mcpguard/asmeta",
		"github.com/mcpguard/mcpguard/internal/fetch",
		"github.com/go-jose/go-jose/v4",
		"golang.org/x/oauth2",
		"golang.org/x/sync/singleflight",
		"code.dny.dev/ssrf", // through internal/fetch
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == pkg {
			continue
		}
		ok := false
		for _, a := range allowed {
			if dep == a || strings.HasPrefix(dep, a+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("validate/introspect depends on %s, which docs/DESIGN.md does not allow", dep)
		}
	}
}
