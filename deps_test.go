package mcpguard

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mcpguard/mcpguard"

// goList runs go list with args in the module root and returns its output
// lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %s", strings.Join(args, " "), err.Error())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestDeps enforces the place of the root package in docs/DESIGN.md: it
// sits on top of the layering, importing only validate, validate/jwks,
// middleware and prm (and the standard library) directly, and nothing in
// the module's non-test code imports it except examples.
func TestDeps(t *testing.T) {
	allowed := map[string]bool{
		module + "/validate":      true,
		module + "/validate/jwks": true,
		module + "/middleware":    true,
		module + "/prm":           true,
	}
	for _, line := range goList(t, "-f", `{{range .Imports}}{{.}}{{"\n"}}{{end}}`, ".") {
		p := strings.TrimSpace(line)
		if p == "" || allowed[p] || !strings.Contains(strings.Split(p, "/")[0], ".") {
			continue // allowed, or standard library
		}
		t.Errorf("mcpguard imports %s; it may import only validate, validate/jwks, middleware, prm and the standard library", p)
	}

	// -e: a package being written by someone else may not compile; its
	// imports are still listed.
	for _, line := range goList(t, "-e", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		if under(pkg, module+"/examples") || under(pkg, module+"/integration") {
			continue
		}
		for _, imp := range fields[1:] {
			if imp == module {
				t.Errorf("%s imports the root package %s; only examples and tests may", pkg, module)
			}
		}
	}
}

// under reports whether pkg is dir or below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
