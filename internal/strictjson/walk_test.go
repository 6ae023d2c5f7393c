package strictjson

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

var errStop = errors.New("stop")

// membersTree is what Walk replaces: Members on the document, then on the
// raw value of each "sub" object member, recursively, and on each object
// element of a "sub" array (Elements).
func membersTree(doc []byte, path string, out *[]string) error {
	return Members(doc, []string{"a", "sub"}, func(name, value []byte) error {
		p := path + "/" + string(name)
		switch {
		case string(name) == "sub" && value[0] == '{':
			return membersTree(value, p, out)
		case string(name) == "sub" && value[0] == '[':
			elems, ok := Elements(value)
			if !ok {
				return ErrSyntax
			}
			var first error
			for i, e := range elems {
				ep := fmt.Sprintf("%s[%d]", p, i)
				*out = append(*out, ep+"@"+string(e))
				if e[0] != '{' || first != nil {
					continue
				}
				first = membersTree(e, ep, out)
			}
			return first
		case string(value) == `"stop"`:
			return errStop
		}
		*out = append(*out, p+"="+string(value))
		return nil
	})
}

// walkTree reads the same in one pass with Walk and Value.Members.
func walkTree(doc []byte, out *[]string) error {
	var member func(path string) func(v *Value, name []byte) error
	member = func(path string) func(v *Value, name []byte) error {
		return func(v *Value, name []byte) error {
			p := path + "/" + string(name)
			if string(name) == "sub" && v.Kind() == '{' {
				return v.Members([]string{"a", "sub"}, member(p))
			}
			if string(name) == "sub" && v.Kind() == '[' {
				i := 0
				var first error
				err := v.Elements(func(e *Value) error {
					ep := fmt.Sprintf("%s[%d]", p, i)
					i++
					var err error
					if e.Kind() == '{' {
						n := len(*out)
						err = e.Members([]string{"a", "sub"}, member(ep))
						s, end := e.Offsets()
						*out = slices.Insert(*out, n, ep+"@"+string(doc[s:end]))
					} else if _, err = e.Raw(); err == nil {
						s, end := e.Offsets()
						*out = append(*out, ep+"@"+string(doc[s:end]))
					}
					if first == nil {
						first = err
					}
					return nil
				})
				if err != nil {
					return err
				}
				return first
			}
			raw, err := v.Raw()
			if err != nil {
				return err
			}
			if string(raw) == `"stop"` {
				return errStop
			}
			*out = append(*out, p+"="+string(raw))
			return nil
		}
	}
	return Walk(doc, []string{"a", "sub"}, member(""))
}

// FuzzWalkAgreesWithMembers: reading nested objects in one pass gives the
// members and the error that reading each object again with Members gives.
func FuzzWalkAgreesWithMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"sub":{"a":"x","sub":{"A":1}}}`, `{"sub":{"a":"stop"},"x":[}`,
		`{"sub":{"a":1,"b":2,"b":3}}`, `{"sub":{"a":"stop"},"A":1}`, `{"a":"stop","sub":{"SUB":1}}`,
		`{"sub":{"Sub":{},"sub":{}}}`, "{\"sub\":{\"a\":\"\xff\"}}", `[{"a":1}]`, `{"sub":[{"a":1}]}`,
		`{"sub":[ {"a":1} , 2,{"sub":[[],{"A":1,"a":2}]} ,"x"]}`, `{"sub":[{"a":"stop"},{"a":1,"a":2}]}`, `{"sub":[1,}`, `{"sub":[]}`} {
		f.Add([]byte(s))
	}
	sentinels := []error{ErrSyntax, ErrInvalidUTF8, ErrDuplicateName, ErrCaseVariant, ErrNotObject, errStop}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var want, got []string
		werr := membersTree(doc, "", &want)
		gerr := walkTree(doc, &got)
		for _, s := range sentinels {
			if errors.Is(werr, s) != errors.Is(gerr, s) {
				t.Fatalf("%q: Members %v, Walk %v", doc, werr, gerr)
			}
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: Members %v, Walk %v", doc, werr, gerr)
		}
		if werr == nil && !slices.Equal(want, got) {
			t.Fatalf("%q: Members read %q, Walk %q", doc, want, got)
		}
	})
}

// TestWalkPool: a Pool's readers keep their nested state between documents
// without leaking it into the next one.
func TestWalkPool(t *testing.T) {
	var p Pool
	read := func(doc string) error {
		return p.Walk([]byte(doc), []string{"sub"}, func(v *Value, name []byte) error {
			return v.Members([]string{"a"}, func(*Value, []byte) error { return nil })
		})
	}
	if err := read(`{"sub":{"a":1,"A":2}}`); !errors.Is(err, ErrCaseVariant) {
		t.Fatalf("case variant in sub: %v", err)
	}
	if err := read(`{"sub":{"a":1}}`); err != nil {
		t.Fatalf("second document: %v", err)
	}
}
