package cimd

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps enforces the layering in docs/DESIGN.md: cimd may import the
// standard library, asmeta, internal/fetch and a short list of third-party
// packages, and never validate, challenge, prm or middleware.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/mcpguard/mcpguard/"
	allowed := []string{
		mod + "cimd", mod + "asmeta", mod + "internal/fetch",
		"code.dny.dev/ssrf", "go.etcd.io/bbolt", "golang.org/x/time/", "golang.org/x/sync/",
		"golang.org/x/sys/", // bbolt's own dependency
	}
	for _, p := range strings.Fields(string(out)) {
		ok := false
		for _, a := range allowed {
			if p == a || p == strings.TrimSuffix(a, "/") || strings.HasPrefix(p, strings.TrimSuffix(a, "/")+"/") {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("cimd depends on %s, which the layering does not allow", p)
		}
	}
}
