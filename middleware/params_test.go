package middleware

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestAtMostFiveParameters keeps the refusal path readable (issue #26): no
// function or method of the package's library code takes more than five
// parameters (the receiver not counted). A sixth belongs in a value such
// as refusal.
func TestAtMostFiveParameters(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			switch x := n.(type) {
			case *ast.FuncDecl:
				ft = x.Type
			case *ast.FuncLit:
				ft = x.Type
			default:
				return true
			}
			count := 0
			for _, p := range ft.Params.List {
				count += max(len(p.Names), 1)
			}
			if count > 5 {
				t.Errorf("%s: %d parameters, want at most 5", fset.Position(ft.Pos()), count)
			}
			return true
		})
	}
}
