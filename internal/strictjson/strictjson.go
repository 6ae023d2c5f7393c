package strictjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Errors, one per class of the policy (see the package documentation).
// Callers map them to their own sentinels with errors.Is.
var (
	ErrSyntax        = errors.New("strictjson: invalid JSON")
	ErrInvalidUTF8   = errors.New("strictjson: invalid UTF-8")
	ErrDuplicateName = errors.New("strictjson: duplicate member name")
	ErrCaseVariant   = errors.New("strictjson: member names equal under case folding")
	ErrNotObject     = errors.New("strictjson: not a JSON object")
)

// maxPairwise is the member count up to which case variants are looked
// for pairwise, which allocates nothing; above it a map of folded names
// keeps the cost linear in hostile objects with thousands of members.
const maxPairwise = 16

// Members reads doc, which must be exactly one JSON object, by the policy
// and calls fn for each of its top-level members in document order, with
// the member's name (unescaped) and its raw value, a sub-slice of doc
// without surrounding whitespace. Both are valid only as long as doc is,
// and must not be modified. fn is called before the rest of doc has been
// checked: it should only record what it is given. Members returns the
// first error fn returns, unwrapped, or an error wrapping one of the
// package's sentinels: [ErrNotObject] when doc is well-formed but not an
// object, [ErrSyntax], [ErrInvalidUTF8], [ErrDuplicateName] (any depth),
// or [ErrCaseVariant] (top level). Nested objects are validated but not
// checked for case variants; call Members on a value to read its members.
func Members(doc []byte, fn func(name, value []byte) error) error {
	buf := bytes.NewBuffer(doc)
	dec := jsontext.NewDecoder(buf)
	switch dec.PeekKind() {
	case '{':
	case 0: // invalid or empty
		return classify(doc, dec, nil)
	default:
		if err := Valid(doc); err != nil {
			return err
		}
		return ErrNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return classify(doc, dec, err)
	}
	var small [maxPairwise][]byte
	names := small[:0]
	var folded map[string]struct{}
	var caseErr error // reported once the whole document is known to be well-formed
	for dec.PeekKind() == '"' {
		raw, err := dec.ReadValue()
		if err != nil {
			return classify(doc, dec, err)
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return ErrSyntax // unreachable: the decoder checked raw
			}
		}
		// Rule 4: case variants, linear in the member count.
		switch {
		case caseErr != nil:
		case len(names) < maxPairwise:
			for _, n := range names {
				if bytes.EqualFold(n, name) {
					caseErr = caseOrDup(n, name)
				}
			}
			names = append(names, name)
		default:
			if folded == nil {
				folded = make(map[string]struct{}, 2*maxPairwise)
				for _, n := range names {
					folded[fold(n)] = struct{}{}
				}
			}
			f := fold(name)
			if _, ok := folded[f]; ok {
				caseErr = ErrCaseVariant // an exact repeat fails in the decoder first
			}
			folded[f] = struct{}{}
		}
		v, err := dec.ReadValue()
		if err != nil {
			return classify(doc, dec, err)
		}
		// v may point into the decoder's buffer, which is doc itself
		// (bytes.Buffer is read in place); slice doc so that the value
		// stays valid whatever the decoder does next.
		end := int(dec.InputOffset())
		if err := fn(name, doc[end-len(v):end:end]); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}', or a syntax error
		return classify(doc, dec, err)
	}
	if _, err := dec.ReadToken(); err != io.EOF { // trailing data
		return classify(doc, dec, err)
	}
	return caseErr
}

// caseOrDup reports an exact repeat as ErrDuplicateName (jsontext would
// report it a moment later) and any other case variant as ErrCaseVariant.
func caseOrDup(a, b []byte) error {
	if bytes.Equal(a, b) {
		return ErrDuplicateName
	}
	return ErrCaseVariant
}

// Valid checks doc, which may be any JSON value, by rules 1 to 3 of the
// policy. It returns nil or an error wrapping [ErrSyntax],
// [ErrInvalidUTF8] or [ErrDuplicateName].
func Valid(doc []byte) error {
	if jsontext.Value(doc).IsValid() {
		return nil
	}
	return classify(doc, nil, nil)
}

// Unmarshal decodes doc into v with go-json-experiment/json's default
// options: rules 1 to 3 of the policy, and names matched to struct fields
// case-sensitively. It is for documents handed whole to a caller after
// they were checked with [Members].
func Unmarshal(doc []byte, v any) error {
	return json.Unmarshal(doc, v)
}

// classify maps a failure to read doc to one sentinel. Invalid UTF-8 and
// duplicate names are told apart from other syntax errors by checking
// doc again with each relaxed, which costs nothing on the success path.
func classify(doc []byte, _ *jsontext.Decoder, err error) error {
	var serr *jsontext.SyntacticError
	if errors.As(err, &serr) && serr.Err == jsontext.ErrDuplicateName {
		return ErrDuplicateName
	}
	v := jsontext.Value(doc)
	switch {
	case !v.IsValid(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)):
		return ErrSyntax
	case !v.IsValid(jsontext.AllowInvalidUTF8(true)):
		return ErrDuplicateName
	case !v.IsValid():
		return ErrInvalidUTF8
	}
	// Only a well-formed document that is not what the caller asked for
	// (an object) gets here; Members checks that itself.
	return ErrSyntax
}

// String decodes v, the raw text of a JSON value already checked by
// [Members] or [Valid], as a string. It reports false if v is not a JSON
// string. Without escapes the result shares v's memory when T is string.
func String[T ~string | ~[]byte](v T) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	if !containsBackslash(body) {
		return string(body), true
	}
	out, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", false
	}
	return string(out), true
}

func containsBackslash[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			return true
		}
	}
	return false
}

// Strings decodes v, the raw text of a JSON value already checked, as an
// array of strings. It reports false for anything else. An empty array
// gives a non-nil empty slice.
func Strings[T ~string | ~[]byte](v T) ([]string, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer([]byte(v)))
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	out := []string{}
	for dec.PeekKind() == '"' {
		e, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		s, ok := String(e)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	if t, err := dec.ReadToken(); err != nil || t.Kind() != ']' {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// fold maps name so that fold(a) == fold(b) exactly when
// bytes.EqualFold(a, b): ASCII letters to upper case, other runes to the
// smallest rune of their simple case-folding orbit.
func fold(name []byte) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range string(name) {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b.WriteRune(r)
	}
	return b.String()
}
