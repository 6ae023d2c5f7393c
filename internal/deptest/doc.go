// Package deptest checks, from a package's own tests, that the package
// depends only on what the layering in docs/DESIGN.md allows (STYLE.md
// rule 15), in the style of tailscale's tstest/deptest. It is test
// support: it imports testing, and only _test.go files may import it.
//
// A package's deps_test.go states its rule in a few lines:
//
//	func TestDeps(t *testing.T) {
//		deptest.DepChecker{
//			Allowed: []string{deptest.Module + "/validate", "github.com/go-jose/go-jose/v4/..."},
//			BadDeps: map[string]string{"testing": "imported by non-test code"},
//		}.Check(t, ".")
//		deptest.CheckNotImported(t, deptest.Module+"/client", deptest.Module+"/examples/...")
//	}
//
// The checks run the go command (go list); without it on PATH they skip.
package deptest
