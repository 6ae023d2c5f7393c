package strictjson

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Value is the value of one member during [Walk]: the member's callback
// reads it ([Value.Raw]), descends into it when it is an object
// ([Value.Members]), or leaves it, and then it is skipped (still checked
// by the policy). A Value is valid only during the callback it is given to.
type Value struct {
	r          *reader
	doc        []byte
	depth      int  // of the object the member is in
	read       bool // Raw, Members or Elements consumed the value
	start, end int  // its offsets in doc once read
}

// Kind returns the kind of the value without reading it: '{', '[', '"',
// 'n', 't', 'f' or '0' (a number), as jsontext.Kind; 0 if it is not
// well-formed.
func (v *Value) Kind() byte {
	if v.read || v.r.err != nil {
		return 0
	}
	return byte(v.r.dec.PeekKind())
}

// Raw reads the value and returns its raw text, a sub-slice of the
// document without surrounding whitespace, valid as long as the document
// is, not to be modified.
func (v *Value) Raw() ([]byte, error) {
	raw, _, err := v.span()
	return raw, err
}

// span is Raw, with the offset of the value's end in the document.
func (v *Value) span() ([]byte, int, error) {
	if v.read || v.r.err != nil {
		return nil, 0, v.fail()
	}
	v.read = true
	raw, err := v.r.dec.ReadValue()
	if err != nil {
		v.r.err = classify(v.doc, err)
		return nil, 0, v.r.err
	}
	// The decoder reads the document in place (bytes.Buffer), so raw lies
	// in it and ends at the input offset.
	end := int(v.r.dec.InputOffset())
	v.start, v.end = end-len(raw), end
	return v.doc[end-len(raw) : end : end], end, nil
}

// Offsets returns the byte offsets of the value in the document,
// doc[start:end], once it has been read by [Value.Raw], [Value.Members]
// or [Value.Elements] without error; before, or after an error, they mean
// nothing.
func (v *Value) Offsets() (start, end int) { return v.start, v.end }

// Members reads the value, which must be an object (else it is only
// read, and Members returns nil), calling fn for each of its members as
// [Walk] does for the document's, and checking its names for case
// variants of read and of each other (rule 4). Unlike Walk's, its errors
// wait for the end of the object: a syntax error anywhere in it is
// returned first; then the first error fn returned (fn is not called again
// after one); then a case variant.
func (v *Value) Members(read []string, fn func(v *Value, name []byte) error) error {
	if v.Kind() != '{' {
		_, err := v.Raw()
		return err
	}
	v.read = true
	if _, err := v.r.dec.ReadToken(); err != nil {
		v.r.err = classify(v.doc, err)
		return v.r.err
	}
	v.start = int(v.r.dec.InputOffset()) - 1 // the '{' just read
	err := v.r.object(v.doc, v.depth+1, read, fn)
	v.end = int(v.r.dec.InputOffset())
	return err
}

// Elements reads the value, which must be an array (else it is only read,
// and Elements returns nil), calling fn for each of its elements in
// order with the element's [Value], which fn reads ([Value.Raw]),
// descends into ([Value.Members], [Value.Elements]) or leaves to be
// skipped (still checked by the policy), all in the one pass of the
// tokenizer. Its errors wait for the end of the array, as those of
// [Value.Members]: a syntax error anywhere in it first, then the first
// error fn returned (fn is not called again after one).
func (v *Value) Elements(fn func(e *Value) error) error {
	if v.Kind() != '[' {
		_, err := v.Raw()
		return err
	}
	v.read = true
	r := v.r
	dec := &r.dec
	if _, err := dec.ReadToken(); err != nil {
		r.err = classify(v.doc, err)
		return r.err
	}
	v.start = int(dec.InputOffset()) - 1 // the '[' just read
	// Elements take the depth below the array's, with a slot of their
	// own: an element's members are one level further down, so no two
	// values being read at once share a slot.
	e := r.elem(v.depth + 1)
	var first error
	for {
		if k := dec.PeekKind(); k == ']' || k == 0 {
			break
		}
		*e = Value{r: r, doc: v.doc, depth: v.depth + 1}
		if first == nil {
			first = fn(e)
		}
		if r.err != nil {
			return r.err
		}
		if !e.read {
			if _, err := dec.ReadValue(); err != nil {
				r.err = classify(v.doc, err)
				return r.err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // ']', or a syntax error
		r.err = classify(v.doc, err)
		return r.err
	}
	v.end = int(dec.InputOffset())
	return first
}

func (v *Value) fail() error {
	if v.r.err != nil {
		return v.r.err
	}
	return ErrSyntax // a Value read twice: a caller's mistake
}

// Walk reads doc, which must be exactly one JSON object, by the policy, in
// one pass of the tokenizer, and calls fn for each of its members in
// document order, with the member's name (unescaped; valid only during the
// call) and its [Value]. fn is called before the rest of doc has been
// checked: it should only record what it is given. Walk returns the first
// error fn returns, unwrapped and at once, or an error wrapping one of the
// package's sentinels, as [Members] does: [ErrNotObject], [ErrSyntax],
// [ErrInvalidUTF8], [ErrDuplicateName] (any depth), or [ErrCaseVariant]
// (in the top-level object, or in an object read with [Value.Members]).
// So reading an object member's members with [Value.Members] inside fn
// answers as calling [Members] on the raw value would, without tokenizing
// the value twice.
func Walk(doc []byte, read []string, fn func(v *Value, name []byte) error) error {
	var r reader
	return r.walk(doc, read, fn)
}

// Walk is the package-level [Walk], reusing p's buffers.
func (p *Pool) Walk(doc []byte, read []string, fn func(v *Value, name []byte) error) error {
	r := p.get()
	err := r.walk(doc, read, fn)
	p.put(r)
	return err
}

func (r *reader) walk(doc []byte, read []string, fn func(v *Value, name []byte) error) error {
	r.buf = *bytes.NewBuffer(doc)
	dec := &r.dec
	dec.Reset(&r.buf)
	r.err = nil
	switch dec.PeekKind() {
	case '{':
	case 0: // invalid or empty
		return classify(doc, nil)
	default:
		if err := Valid(doc); err != nil {
			return err
		}
		return ErrNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return classify(doc, err)
	}
	if err := r.object(doc, 0, read, fn); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF { // trailing data
		return classify(doc, err)
	}
	return r.names.err
}

// object reads the members of the object at depth whose '{' was just
// read, through its '}'. At depth 0 an error of fn is returned at once and
// the case variant is left in r.names for walk to return last; deeper,
// errors wait for the end of the object ([Value.Members]).
func (r *reader) object(doc []byte, depth int, read []string, fn func(v *Value, name []byte) error) error {
	dec := &r.dec
	names, v := r.level(depth)
	names.reset()
	var first error
	for dec.PeekKind() == '"' {
		raw, err := dec.ReadValue()
		if err != nil {
			return classify(doc, err)
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return ErrSyntax // unreachable: the decoder checked raw
			}
		}
		ascii := isASCII(name)
		names.add(name, ascii)
		if names.err == nil && caseVariantOf(name, ascii, read) {
			names.err = ErrCaseVariant
		}
		*v = Value{r: r, doc: doc, depth: depth}
		if first == nil {
			first = fn(v, name)
			if first != nil && depth == 0 && r.err == nil {
				return first
			}
		}
		if r.err != nil {
			return r.err
		}
		if !v.read {
			// ReadValue, not SkipValue: the same checks (SkipValue is
			// ReadValue without keeping the result), in one call of the
			// tokenizer where SkipValue reads an object token by token;
			// the document is read in place, so nothing is copied.
			if _, err := dec.ReadValue(); err != nil {
				return classify(doc, err)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}', or a syntax error
		return classify(doc, err)
	}
	switch {
	case first != nil:
		return first
	case depth == 0:
		return nil
	}
	return names.err
}

// level returns the name set and the member value of the object at
// depth, kept in r for the next document (a Value handed to a callback
// would otherwise escape to the heap for every member).
func (r *reader) level(depth int) (*nameSet, *Value) {
	if depth == 0 {
		return &r.names, &r.value
	}
	for len(r.nested) < depth {
		r.nested = append(r.nested, new(level))
	}
	l := r.nested[depth-1]
	return &l.names, &l.value
}

// elem returns the slot of the element values of an array whose
// elements are at depth (> 0), kept in r as level does.
func (r *reader) elem(depth int) *Value {
	r.level(depth)
	return &r.nested[depth-1].elem
}

// level is the state of one object (or array) below the top during [Walk].
type level struct {
	names nameSet
	value Value
	elem  Value
}
