package proxy_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated reference of docs/proxy.md")

const (
	beginRef = "<!-- BEGIN GENERATED: go test ./proxy -run TestDocsReference -update -->\n"
	endRef   = "<!-- END GENERATED -->\n"
)

// TestDocsReference: the configuration reference of docs/proxy.md is
// generated from the godoc of Config and the types below it (one
// source); this test fails when they differ.
func TestDocsReference(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]*ast.StructType{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					types[ts.Name.Name] = st
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString("| key | type | meaning |\n|---|---|---|\n")
	var walk func(st *ast.StructType, prefix string)
	walk = func(st *ast.StructType, prefix string) {
		for _, fld := range st.Fields.List {
			if fld.Tag == nil || len(fld.Names) == 0 {
				continue
			}
			key := reflect.StructTag(strings.Trim(fld.Tag.Value, "`")).Get("yaml")
			if key == "" || key == "-" {
				continue
			}
			typ, inner := yamlType(fld.Type, types)
			doc := strings.Join(strings.Fields(fld.Doc.Text()), " ")
			doc = strings.TrimPrefix(doc, fld.Names[0].Name+" ")
			doc = strings.ReplaceAll(doc, "|", "\\|")
			if doc != "" {
				doc = strings.ToUpper(doc[:1]) + doc[1:]
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s |\n", prefix, key, typ, doc)
			if inner != "" {
				sub := prefix + key + "."
				switch {
				case strings.HasPrefix(typ, "list"):
					sub = prefix + key + "[]."
				case strings.HasPrefix(typ, "mapping of"):
					sub = prefix + key + ".<name>."
				}
				walk(types[inner], sub)
			}
		}
	}
	walk(types["Config"], "")
	gen := b.String()
	doc, err := os.ReadFile("../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginRef), strings.Index(s, endRef)
	if i < 0 || j < i {
		t.Fatalf("docs/proxy.md lacks the markers %q and %q", beginRef, endRef)
	}
	cur := s[i+len(beginRef) : j]
	if cur == gen {
		return
	}
	if *update {
		if err := os.WriteFile("../docs/proxy.md", []byte(s[:i+len(beginRef)]+gen+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/proxy.md's reference differs from config.go's godoc; run: go test ./proxy -run TestDocsReference -update")
}

// yamlType names a field's type for the reference, and the struct it
// contains, if any.
func yamlType(e ast.Expr, types map[string]*ast.StructType) (string, string) {
	switch e := e.(type) {
	case *ast.Ident:
		switch e.Name {
		case "string":
			return "string", ""
		case "bool":
			return "boolean", ""
		case "int", "int64":
			return "integer", ""
		}
		if _, ok := types[e.Name]; ok {
			return "mapping", e.Name
		}
		return e.Name, ""
	case *ast.SelectorExpr:
		if e.Sel.Name == "Duration" {
			return "duration (\"30s\", \"5m\")", ""
		}
	case *ast.ArrayType:
		t, inner := yamlType(e.Elt, types)
		if inner != "" {
			return "list of mappings", inner
		}
		return "list of " + t + "s", ""
	case *ast.MapType:
		t, inner := yamlType(e.Value, types)
		switch {
		case inner != "":
			return "mapping of name to mappings", inner
		case t == "list of strings":
			return "mapping of name to list of strings", ""
		}
		return "mapping of name to " + t, ""
	}
	return "?", ""
}
