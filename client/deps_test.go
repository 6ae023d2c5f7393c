package client

import (
	"os/exec"
	"strings"
	"testing"
)

const self = "github.com/mcpguard/mcpguard/client"

// TestDeps fails if client imports anything beyond the standard library,
// challenge, prm and golang.org/x/oauth2 (DESIGN.md layering: client is an
// edge and must not grow the server packages' imports).
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		self:                                     true,
		"github.com/mcpguard/mcpguard/challenge": true,
		"github.com/mcpguard/mcpguard/prm":       true,
		"golang.org/x/oauth2":                    true,
		"golang.org/x/oauth2/internal":           true,
		"golang.org/x/oauth2/clientcredentials":  true,
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("forbidden dependency %s: client may import only challenge, prm and golang.org/x/oauth2", p)
		}
	}
}

// TestNotImported fails if a non-test package of the module other than
// examples imports client.
func TestNotImported(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/mcpguard/mcpguard/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == self || strings.HasPrefix(f[0], "github.com/mcpguard/mcpguard/examples/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == self {
				t.Errorf("%s imports client; only tests and examples may", f[0])
			}
		}
	}
}
