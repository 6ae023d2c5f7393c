package strictjson

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"strings"
	"sync"
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
	ErrCaseVariant   = errors.New("strictjson: case-variant member name")
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
// or [ErrCaseVariant] (top level: two names equal under simple case
// folding, or a name that is a case variant of one of read, the names the
// caller reads). Nested objects are validated but not checked for case
// variants; call Members on a value to read its members. Names are
// matched exactly: fn sees every member, and picks out read itself.
func Members(doc []byte, read []string, fn func(name, value []byte) error) error {
	return MemberSpans(doc, read, func(name []byte, start, end int) error {
		return fn(name, doc[start:end:end])
	})
}

// MemberSpans is [Members] with each value given as its byte offsets in
// doc, doc[start:end], so that a caller holding doc also as a string can
// take sub-strings without copying.
func MemberSpans(doc []byte, read []string, fn func(name []byte, start, end int) error) error {
	var r reader
	return r.memberSpans(doc, read, fn)
}

// Pool reads documents like [Members] and [MemberSpans], reusing the
// tokenizer's buffers across calls, which saves most of its allocations.
// The zero value is ready to use; a Pool must not be copied after first
// use. It is safe for concurrent use. Put one in a long-lived value (a
// Validator, a Middleware), never in a package variable.
type Pool struct {
	// A short free list rather than a sync.Pool: just as cheap here, and
	// deterministic (sync.Pool drops items at random under the race
	// detector, which makes allocation tests flaky).
	mu   sync.Mutex
	free []*reader
}

// maxFree bounds the readers a Pool keeps (each holds a few hundred bytes
// of tokenizer state).
const maxFree = 16

// Members is the package-level [Members], reusing p's buffers.
func (p *Pool) Members(doc []byte, read []string, fn func(name, value []byte) error) error {
	return p.MemberSpans(doc, read, func(name []byte, start, end int) error {
		return fn(name, doc[start:end:end])
	})
}

// MemberSpans is the package-level [MemberSpans], reusing p's buffers.
func (p *Pool) MemberSpans(doc []byte, read []string, fn func(name []byte, start, end int) error) error {
	r := p.get()
	err := r.memberSpans(doc, read, fn)
	p.put(r)
	return err
}

// get takes a reader from the free list, or makes one.
func (p *Pool) get() *reader {
	var r *reader
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		r, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if r == nil {
		r = new(reader)
	}
	return r
}

// put returns r, done with its document, to the free list.
func (p *Pool) put(r *reader) {
	r.buf = bytes.Buffer{} // drop doc
	r.dec.Reset(&r.buf)
	r.err = nil
	r.value = Value{}
	for _, l := range r.nested {
		l.value, l.elem = Value{}, Value{}
	}
	p.mu.Lock()
	if len(p.free) < maxFree {
		p.free = append(p.free, r)
	}
	p.mu.Unlock()
}

// reader is the state of one read: the input, the tokenizer and the
// names seen, at the top level and in each object read below it
// ([Value.Members]).
type reader struct {
	buf    bytes.Buffer
	dec    jsontext.Decoder
	names  nameSet
	value  Value
	nested []*level
	err    error // the first syntax error of a Value's read, final
}

// memberSpans is [Walk] giving fn each value's span.
func (r *reader) memberSpans(doc []byte, read []string, fn func(name []byte, start, end int) error) error {
	return r.walk(doc, read, func(v *Value, name []byte) error {
		raw, end, err := v.span()
		if err != nil {
			return err
		}
		return fn(name, end-len(raw), end)
	})
}

// nameSet finds member names equal under simple case folding (rule 4),
// in time linear in the member count: pairwise, without allocating, for
// up to maxPairwise names; above that through a map of seeded hashes of
// the folded names, confirmed with bytes.EqualFold, so a hostile object
// with thousands of members costs no more than reading it.
type nameSet struct {
	small [maxPairwise][]byte
	names [][]byte
	ascii [maxPairwise]bool // of names[i], for the pairwise path
	seen  map[uint64]int    // hash of the folded name -> index in names
	seed  maphash.Seed
	err   error // the first case variant; reported once doc is known well-formed
}

// reset empties s for another document, keeping its storage.
func (s *nameSet) reset() {
	// Up to maxPairwise names, names is small's prefix; past it, a copy
	// of small followed by the rest.
	if n := len(s.names); n <= maxPairwise {
		clear(s.small[:n])
	} else {
		clear(s.small[:])
		clear(s.names)
	}
	s.names = s.small[:0]
	s.seen = nil
	s.err = nil
}

func (s *nameSet) add(name []byte, ascii bool) {
	if s.err != nil {
		return
	}
	if s.names == nil {
		s.names = s.small[:0]
	}
	if len(s.names) < maxPairwise {
		for i, n := range s.names {
			// Two ASCII names are equal under folding only if equally long.
			if (ascii && s.ascii[i] && len(n) != len(name)) || !bytes.EqualFold(n, name) {
				continue
			}
			s.err = caseOrDup(n, name)
			return
		}
		s.ascii[len(s.names)] = ascii
		s.names = append(s.names, name)
		return
	}
	if s.seen == nil {
		s.seed = maphash.MakeSeed()
		s.seen = make(map[uint64]int, 4*maxPairwise)
		for i, n := range s.names {
			s.seen[s.hash(n)] = i
		}
	}
	h := s.hash(name)
	if i, ok := s.seen[h]; ok && bytes.EqualFold(s.names[i], name) {
		s.err = caseOrDup(s.names[i], name)
		return
	}
	s.seen[h] = len(s.names)
	s.names = append(s.names, name)
}

// hash returns the seeded hash of name folded so that two names hash
// alike when bytes.EqualFold holds: ASCII letters to upper case, other
// runes to the smallest rune of their simple case-folding orbit.
func (s *nameSet) hash(name []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, r := range string(name) {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			h.WriteByte(byte(r))
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
		var buf [utf8.UTFMax]byte
		h.Write(utf8.AppendRune(buf[:0], r))
	}
	return h.Sum64()
}

// caseVariantOf reports whether name differs from each of read but is
// equal to one of them under simple case folding. A name that is one of
// read is no variant (the names read are distinct under folding), and an
// ASCII name can only fold to an ASCII name of its own length, which
// keeps the common cases to a few length compares.
func caseVariantOf(name []byte, ascii bool, read []string) bool {
	for _, r := range read {
		if string(name) == r {
			return false
		}
	}
	for _, r := range read {
		switch {
		case ascii && len(r) != len(name):
		case ascii && isASCII(r):
			if asciiEqualFold(name, r) {
				return true
			}
		case strings.EqualFold(string(name), r):
			return true
		}
	}
	return false
}

func isASCII[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// IsASCII reports whether s has only ASCII bytes (eight at a time).
func IsASCII(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if binary.LittleEndian.Uint64(s[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiEqualFold is strings.EqualFold for two ASCII strings of one length.
func asciiEqualFold(a []byte, b string) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
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
	return classify(doc, nil)
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
func classify(doc []byte, err error) error {
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

// Elements returns the raw elements of v, the raw text of a JSON array
// already checked, as sub-slices of v. It reports false for anything else.
func Elements(v []byte) ([][]byte, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(v))
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	out := [][]byte{}
	for dec.PeekKind() != ']' {
		e, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		out = append(out, v[end-len(e):end:end])
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// Compact returns v, a JSON value, without insignificant whitespace,
// leaving strings and numbers as they were written (nothing is escaped
// or unescaped). It fails unless v passes rules 1 to 3 of the policy.
func Compact(v []byte) ([]byte, error) {
	if err := Valid(v); err != nil {
		return nil, err
	}
	out := jsontext.Value(bytes.Clone(v))
	if err := out.Compact(); err != nil {
		return nil, classify(v, err)
	}
	return out, nil
}

// Canonical returns v, a JSON value, in the RFC 8785 canonical form (JCS:
// members sorted, no insignificant whitespace, numbers and strings in
// their canonical spelling), for digests that must not depend on how a
// client spelled the value. v is not modified.
func Canonical(v []byte) ([]byte, error) {
	c := jsontext.Value(bytes.Clone(v))
	if err := c.Canonicalize(); err != nil {
		return nil, classify(v, err)
	}
	return c, nil
}
