package jwks

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md. validate/jwks may import
// validate, asmeta, internal/fetch, jwkset, go-jose, x/sync and x/time; it
// must not pull in golang-jwt (through keyfunc) or middleware.
func TestDeps(t *testing.T) {
	const pkg = "github.com/mcpguard/mcpguard/validate/jwks"
	allowed := []string{
		"github.com/mcpguard/mcpguard/validate",
		"github.com/mcpguard/mcpguard/asmeta",
		"github.com/mcpguard/mcpguard/internal/fetch",
		"github.com/MicahParks/jwkset",
		"github.com/go-jose/go-jose/v4",
		"golang.org/x/sync/",
		"golang.org/x/time/",
		"code.dny.dev/ssrf", // through internal/fetch
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == pkg {
			continue
		}
		ok := false
		for _, a := range allowed {
			if dep == a || strings.HasPrefix(dep, strings.TrimSuffix(a, "/")+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("validate/jwks depends on %s, which docs/DESIGN.md forbids", dep)
		}
	}
}
