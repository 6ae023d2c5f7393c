package prm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The classes of the project's JSON strictness policy (internal/strictjson,
// docs/jose.md), which prm, a standard-library-only leaf, applies with
// encoding/json's tokenizer: [Parse] wraps them in [ErrInvalidMetadata].
var (
	errJSONSyntax    = errors.New("invalid JSON")
	errJSONUTF8      = errors.New("invalid UTF-8")
	errJSONDuplicate = errors.New("duplicate member name")
	errJSONCase      = errors.New("case-variant member name")
	errJSONNotObject = errors.New("not a JSON object")
)

// maxJSONDepth is the nesting bound of rule 1, jsontext's: 10000 open
// objects and arrays are accepted, 10001 are not.
const maxJSONDepth = 10000

// metadataNames returns the member names [Metadata] reads (its json
// tags), the names rule 4 protects.
func metadataNames() []string {
	var names []string
	for f := range reflect.TypeFor[Metadata]().Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// checkJSON reads doc by the four rules of the project's strictness policy,
// as internal/strictjson's Members does for an object whose members are
// read (FuzzCheckJSONAgreesWithStrictJSON holds it to that):
//
//  1. exactly one JSON value, nested at most 10000 levels (errJSONSyntax);
//  2. valid UTF-8, inside escapes too: no lone surrogate (errJSONUTF8);
//  3. no two members of one object, at any depth, with the same name
//     after unescaping (errJSONDuplicate);
//  4. at the top level, no name that is a case variant of one of read
//     (equal under simple case folding, strings.EqualFold, but not byte
//     for byte), and no two names equal under that folding
//     (errJSONCase).
//
// Then the document must be an object (errJSONNotObject). When several
// rules are broken, the one reported is strictjson's: a repeated name
// read before any other fault, else syntax, repeated name, UTF-8, case
// variant, in that order. Every byte is read by encoding/json's Decoder;
// this function only keeps track of its tokens.
func checkJSON(doc []byte, read []string) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers are only checked, never converted (1e999 is valid JSON)
	var (
		stack    []jsonFrame
		object   bool // the top-level value is an object
		dup      bool // rule 3 broken
		utf      bool // rule 2 broken
		dupEarly bool // rule 3 broken before any other rule, in document order
		caseVar  bool // rule 4 broken
		folded   map[string]string
		syntax   bool
		offset   int64 // of the end of the previous token
	)
	for n := 0; ; n++ {
		tok, err := dec.Token()
		if err != nil { // io.EOF here: an empty or unfinished document
			syntax = true
			break
		}
		if n == 0 {
			object = tok == json.Delim('{')
		}
		if t, ok := tok.(json.Delim); ok && (t == '{' || t == '[') {
			if len(stack) == maxJSONDepth {
				syntax = true
				break
			}
			stack = append(stack, jsonFrame{object: t == '{', wantName: t == '{'})
			offset = dec.InputOffset()
			continue
		}
		if _, ok := tok.(json.Delim); ok { // '}' or ']', matched by the decoder
			stack = stack[:len(stack)-1]
		}
		if t, ok := tok.(string); ok {
			// The decoder turns invalid UTF-8 and lone surrogates into
			// U+FFFD without an error: look at the token's own text.
			if !utf && strings.ContainsRune(t, utf8.RuneError) {
				raw := bytes.TrimLeft(doc[offset:dec.InputOffset()], " \t\r\n,:")
				utf = !utf8.Valid(raw) || loneSurrogates(raw)
			}
			if d := len(stack); d > 0 && stack[d-1].wantName {
				f := &stack[d-1]
				f.wantName = false
				if _, ok := f.names[t]; ok && !dup {
					dup, dupEarly = true, !utf
				}
				if f.names == nil {
					f.names = make(map[string]struct{})
				}
				f.names[t] = struct{}{}
				if d == 1 && !caseVar {
					key := foldKey(t)
					if prev, ok := folded[key]; ok && prev != t {
						caseVar = true
					}
					if folded == nil {
						folded = make(map[string]string)
					}
					folded[key] = t
					caseVar = caseVar || isCaseVariant(t, read)
				}
				offset = dec.InputOffset()
				continue
			}
		}
		offset = dec.InputOffset()
		// A whole value ended: a scalar, or a closed object or array.
		if len(stack) == 0 {
			if _, err := dec.Token(); err != io.EOF { // one value, then only whitespace
				syntax = true
			}
			break
		}
		if f := &stack[len(stack)-1]; f.object {
			f.wantName = true
		}
	}
	switch {
	case dupEarly && object:
		return errJSONDuplicate
	case syntax:
		return errJSONSyntax
	case dup:
		return errJSONDuplicate
	case utf:
		return errJSONUTF8
	case caseVar:
		return errJSONCase
	case !object:
		return errJSONNotObject
	}
	return nil
}

// jsonFrame is an open object or array.
type jsonFrame struct {
	object   bool
	wantName bool // an object whose next string token is a member name
	names    map[string]struct{}
}

// loneSurrogates reports whether doc, one JSON string of valid UTF-8
// whose decoded value holds U+FFFD, has an escape of a lone UTF-16
// surrogate ("\ud800"), which encoding/json decodes to U+FFFD without an
// error. A decoded U+FFFD comes from the rune itself, from its escape
// "\ufffd", or from a lone surrogate; the escapes of U+FFFD are replaced
// by "\u0000" (same length, same escape structure, so a `\\ufffd` that is
// no escape stays no escape), and what U+FFFD remains beyond the literal
// ones came from lone surrogates.
func loneSurrogates(doc []byte) bool {
	d := doc
	for i := range 16 { // the 16 spellings of \uFFFD: hex digits of either case
		esc := []byte(`\ufffd`)
		for j := range 4 {
			if i&(1<<j) != 0 {
				esc[2+j] -= 'a' - 'A'
			}
		}
		d = bytes.ReplaceAll(d, esc, []byte(`\u0000`)) // a copy, never doc itself
	}
	var v string
	if json.Unmarshal(d, &v) != nil {
		return false // unreachable: the decoder read doc before
	}
	return strings.Count(v, "\uFFFD") > bytes.Count(doc, []byte("\uFFFD"))
}

// foldKey maps name to a key that two names share exactly when
// strings.EqualFold holds for them: each rune becomes the smallest rune of
// its simple case-folding orbit.
func foldKey(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// isCaseVariant reports whether name is none of read but equal to one of
// them under simple case folding.
func isCaseVariant(name string, read []string) bool {
	for _, r := range read {
		if name == r {
			return false
		}
	}
	for _, r := range read {
		if strings.EqualFold(name, r) {
			return true
		}
	}
	return false
}
