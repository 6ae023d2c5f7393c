package asmeta

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: asmeta imports the
// standard library and internal/fetch (with its SSRF guard) only.
func TestDeps(t *testing.T) {
	allowed := map[string]bool{
		"github.com/mcpguard/mcpguard/internal/fetch": true,
		"code.dny.dev/ssrf":                           true,
	}
	for _, dep := range nonStdDeps(t, "github.com/mcpguard/mcpguard/asmeta") {
		if !allowed[dep] {
			t.Errorf("asmeta depends on %s, which docs/DESIGN.md forbids", dep)
		}
	}
}

// nonStdDeps lists the non-standard-library packages pkg depends on,
// transitively, excluding pkg itself.
func nonStdDeps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var deps []string
	for _, l := range strings.Fields(string(out)) {
		if l != pkg {
			deps = append(deps, l)
		}
	}
	return deps
}
