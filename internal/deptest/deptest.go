package deptest

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Module is the import path of this module.
const Module = "github.com/mcpguard/mcpguard"

// DepChecker states which packages a package may depend on. Its zero value
// allows the standard library only.
//
// A pattern, in Allowed and in the keys of BadDeps, is an import path,
// which matches that package only, or an import path followed by "/...",
// which matches that package and every package below it, as in the go
// command's package patterns.
type DepChecker struct {
	// Allowed lists patterns for the packages outside the standard library
	// that the checked package may depend on. The checked package itself
	// is always allowed. If empty, only the standard library is.
	Allowed []string

	// AllowUnlisted, if true, skips the Allowed check: every dependency
	// not matched by BadDeps is allowed. Use it only where BadDeps alone
	// states the rule.
	AllowUnlisted bool

	// BadDeps maps a pattern to the reason the checked package must not
	// depend on the packages it matches, standard library included. It
	// takes precedence over Allowed. If nil, no package is named.
	BadDeps map[string]string

	// Direct, if true, checks only the checked package's own imports.
	// Otherwise every package it depends on, transitively, is checked.
	Direct bool
}

// Check fails t, with one Errorf per forbidden dependency, if the package
// pkg (an import path or a relative pattern such as "." for the package
// under test) depends on a package that c does not allow. Only the
// package's non-test files count, as with go list -deps. Check skips t if
// the go command is not on PATH.
func (c DepChecker) Check(t testing.TB, pkg string) {
	t.Helper()
	// One go list gives every dependency, whether it is in the standard
	// library, and the direct imports of pkg (the one line that is not
	// DepOnly).
	lines := goList(t, "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{.DepOnly}}{{range .Imports}} {{.}}{{end}}", pkg)
	std := make(map[string]bool, len(lines))
	var self string
	var imports, all []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("go list: unexpected line %q", l)
		}
		std[f[0]] = f[1] == "true"
		if f[2] == "false" {
			self, imports = f[0], f[3:]
		} else {
			all = append(all, f[0])
		}
	}
	if self == "" {
		t.Fatalf("go list -deps %s: no line for the package itself", pkg)
	}
	deps := all
	if c.Direct {
		deps = imports
	}
	c.report(t, self, c.violations(self, deps, std))
}

// violation is a dependency that a DepChecker forbids, with the reason
// from BadDeps, or "" if it is forbidden for not being allowed.
type violation struct{ dep, why string }

// violations returns the packages in deps that c forbids self to depend
// on, in the order of deps. std reports which packages are in the
// standard library; a package it does not list is taken to be standard if
// the first element of its path has no dot, the go command's rule.
func (c DepChecker) violations(self string, deps []string, std map[string]bool) []violation {
	bad := make([]string, 0, len(c.BadDeps))
	for p := range c.BadDeps {
		bad = append(bad, p)
	}
	slices.Sort(bad) // a deterministic reason when two patterns match
	var vs []violation
	for _, dep := range deps {
		if dep == self {
			continue
		}
		if i := slices.IndexFunc(bad, func(p string) bool { return match(p, dep) }); i >= 0 {
			vs = append(vs, violation{dep, c.BadDeps[bad[i]]})
			continue
		}
		isStd, ok := std[dep]
		if !ok {
			first, _, _ := strings.Cut(dep, "/")
			isStd = !strings.Contains(first, ".")
		}
		if c.AllowUnlisted || isStd || slices.ContainsFunc(c.Allowed, func(p string) bool { return match(p, dep) }) {
			continue
		}
		vs = append(vs, violation{dep: dep})
	}
	return vs
}

// report fails t with one message per violation.
func (c DepChecker) report(t testing.TB, self string, vs []violation) {
	t.Helper()
	verb := "depends on"
	if c.Direct {
		verb = "imports"
	}
	allowed := "the standard library only"
	if len(c.Allowed) > 0 {
		allowed = "the standard library and " + strings.Join(c.Allowed, ", ")
	}
	for _, v := range vs {
		if v.why != "" {
			t.Errorf("%s %s %s: forbidden because %s", self, verb, v.dep, v.why)
		} else {
			t.Errorf("%s %s %s, which docs/DESIGN.md does not allow: it may depend on %s", self, verb, v.dep, allowed)
		}
	}
}

// match reports whether the import path pkg matches pattern: pattern
// itself, or, for a pattern ending in "/...", the path before that suffix
// or any path below it.
func match(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// CheckNotImported fails t if a package of this module other than pkg,
// and other than those matching a pattern in except (patterns as for
// [DepChecker]), imports pkg. Only non-test files count. Packages that do
// not compile are still looked at (go list -e), so that a package being
// written elsewhere in the tree does not hide an import. CheckNotImported
// skips t if the go command is not on PATH.
func CheckNotImported(t testing.TB, pkg string, except ...string) {
	t.Helper()
	for _, l := range goList(t, "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", Module+"/...") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == pkg || slices.ContainsFunc(except, func(p string) bool { return match(p, f[0]) }) {
			continue
		}
		if slices.Contains(f[1:], pkg) {
			t.Errorf("%s imports %s; only %s may", f[0], pkg, strings.Join(append([]string{"tests"}, except...), ", "))
		}
	}
}

// goList runs go list with args and returns its non-empty output lines. It
// skips t if the go command is not on PATH.
func goList(t testing.TB, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %s\n%s", strings.Join(args, " "), err.Error(), stderr)
	}
	var lines []string
	for l := range strings.SplitSeq(string(out), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
