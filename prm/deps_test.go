package prm

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps fails if the package imports anything outside the standard
// library (DESIGN.md layering: prm is a leaf).
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/mcpguard/mcpguard/prm"
	for _, p := range strings.Fields(string(out)) {
		if p != self {
			t.Errorf("forbidden dependency %s: prm must import the standard library only", p)
		}
	}
}
