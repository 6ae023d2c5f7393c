package fetch

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: internal/fetch is a
// leaf that imports the standard library and code.dny.dev/ssrf only.
func TestDeps(t *testing.T) {
	const pkg = "github.com/mcpguard/mcpguard/internal/fetch"
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != pkg && dep != "code.dny.dev/ssrf" {
			t.Errorf("internal/fetch depends on %s, which docs/DESIGN.md forbids", dep)
		}
	}
}
