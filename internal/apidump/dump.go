package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// listed is the part of go list -json that Dump reads.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	Standard   bool
	DepOnly    bool
	Module     *struct{ Path string }
}

// Dump returns the sorted API lines of the public packages of the module
// in dir.
func Dump(dir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Export,Standard,DepOnly,Module", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && isPublic(p) {
			public = append(public, p.ImportPath)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		lines = append(lines, pkgLines(pkg)...)
	}
	sort.Strings(lines)
	return lines, nil
}

// isPublic reports whether p is part of the module's API: not a command,
// not internal, not an example or a test-only tree.
func isPublic(p listed) bool {
	if p.Standard || p.Module == nil || p.Name == "main" {
		return false
	}
	rel, ok := strings.CutPrefix(p.ImportPath, p.Module.Path)
	if !ok {
		return false
	}
	for _, seg := range strings.Split(strings.TrimPrefix(rel, "/"), "/") {
		if seg == "internal" || seg == "examples" || seg == "integration" || seg == "testdata" {
			return false
		}
	}
	return true
}

// Count returns, per package in lines, the number of exported
// identifiers as issue #26 counts them: package-level names (functions,
// types, constants, variables) and methods. Fields and interface methods,
// which have a line each too, belong to their type and are not counted.
func Count(lines []string) map[string]int {
	c := map[string]int{}
	for _, l := range lines {
		p, rest, _ := strings.Cut(strings.TrimPrefix(l, "pkg "), ", ")
		if isMember(rest) {
			continue
		}
		c[p]++
	}
	return c
}

// isMember reports whether the part of a line after "pkg P, " describes a
// field or an interface method ("type T struct, F int").
func isMember(rest string) bool {
	return strings.HasPrefix(rest, "type ") && (strings.Contains(rest, " struct, ") || strings.Contains(rest, " interface, "))
}

// pkgLines returns one line per exported identifier of pkg: package-level
// names, exported fields (including those promoted from unexported
// embedded structs), methods (declared, or promoted through unexported
// embedded fields) and interface methods.
func pkgLines(pkg *types.Package) []string {
	w := writer{pkg: pkg, prefix: "pkg " + pkg.Path() + ", "}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			w.add("const %s %s = %s", name, w.typ(o.Type()), o.Val().ExactString())
		case *types.Var:
			w.add("var %s %s", name, w.typ(o.Type()))
		case *types.Func:
			w.add("func %s%s", name, w.sig(o.Type().(*types.Signature)))
		case *types.TypeName:
			w.typeName(o)
		}
	}
	return w.lines
}

type writer struct {
	pkg    *types.Package
	prefix string
	lines  []string
}

func (w *writer) add(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}

func (w *writer) qualifier(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Name()
}

func (w *writer) typ(t types.Type) string { return types.TypeString(t, w.qualifier) }

// sig formats a signature without parameter names, as the Go api files do.
func (w *writer) sig(s *types.Signature) string {
	var b strings.Builder
	if tp := s.TypeParams(); tp != nil && tp.Len() > 0 {
		b.WriteString(w.typeParams(tp))
	}
	b.WriteString("(")
	for i := range s.Params().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := s.Params().At(i).Type()
		if s.Variadic() && i == s.Params().Len()-1 {
			b.WriteString("..." + w.typ(t.(*types.Slice).Elem()))
		} else {
			b.WriteString(w.typ(t))
		}
	}
	b.WriteString(")")
	switch r := s.Results(); r.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(r.At(0).Type()))
	default:
		b.WriteString(" (")
		for i := range r.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(w.typ(r.At(i).Type()))
		}
		b.WriteString(")")
	}
	return b.String()
}

func (w *writer) typeParams(tp *types.TypeParamList) string {
	var parts []string
	for i := range tp.Len() {
		p := tp.At(i)
		parts = append(parts, p.Obj().Name()+" "+w.typ(p.Constraint()))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (w *writer) typeName(o *types.TypeName) {
	name := o.Name()
	if o.IsAlias() {
		w.add("type %s = %s", name, w.typ(types.Unalias(o.Type())))
		return
	}
	named := o.Type().(*types.Named)
	head := name
	if tp := named.TypeParams(); tp != nil && tp.Len() > 0 {
		head += w.typeParams(tp)
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.add("type %s struct", head)
		w.fields(head, u, map[*types.Struct]bool{})
	case *types.Interface:
		var names []string
		unexported := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			w.add("type %s interface, %s%s", head, m.Name(), w.sig(m.Type().(*types.Signature)))
		}
		if unexported {
			names = append(names, "unexported methods")
		}
		w.add("type %s interface { %s }", head, strings.Join(names, ", "))
	default:
		w.add("type %s %s", head, w.typ(u))
	}
	w.methods(named)
}

// fields adds the exported fields of s, descending into unexported
// embedded structs, whose exported fields are promoted.
func (w *writer) fields(head string, s *types.Struct, seen map[*types.Struct]bool) {
	if seen[s] {
		return
	}
	seen[s] = true
	for i := range s.NumFields() {
		f := s.Field(i)
		if f.Embedded() && !f.Exported() {
			if es, ok := deref(f.Type()).Underlying().(*types.Struct); ok {
				w.fields(head, es, seen)
			}
			continue
		}
		if !f.Exported() {
			continue
		}
		if f.Embedded() {
			w.add("type %s struct, embedded %s", head, w.typ(f.Type()))
			continue
		}
		w.add("type %s struct, %s %s", head, f.Name(), w.typ(f.Type()))
	}
}

// methods adds the exported methods of named and of *named, declared or
// promoted through unexported embedded fields (those promoted through an
// exported embedded field are that field's type's API).
func (w *writer) methods(named *types.Named) {
	if _, ok := named.Underlying().(*types.Interface); ok {
		return
	}
	ms := types.NewMethodSet(types.NewPointer(named))
	value := types.NewMethodSet(named)
	for i := range ms.Len() {
		sel := ms.At(i)
		m := sel.Obj()
		if !m.Exported() || throughExported(named, sel.Index()) {
			continue
		}
		recv := "*" + named.Obj().Name()
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			recv = named.Obj().Name()
		}
		if tp := named.TypeParams(); tp != nil && tp.Len() > 0 {
			var ps []string
			for j := range tp.Len() {
				ps = append(ps, tp.At(j).Obj().Name())
			}
			recv = recv + "[" + strings.Join(ps, ", ") + "]"
		}
		w.add("method (%s) %s%s", recv, m.Name(), w.sig(m.Type().(*types.Signature)))
	}
}

// throughExported reports whether the selection path index from named
// goes through an exported embedded field.
func throughExported(named *types.Named, index []int) bool {
	t := types.Type(named)
	for _, i := range index[:len(index)-1] {
		s, ok := deref(t).Underlying().(*types.Struct)
		if !ok {
			return false
		}
		f := s.Field(i)
		if f.Exported() {
			return true
		}
		t = f.Type()
	}
	return false
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
