package validate

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file holds a minimal reader for the top level of a JSON object. The
// header and the claims set are first checked with validJSON, so the
// scanner below only has to find member boundaries; it still bounds every
// index and returns errMalformedJSON rather than panic.
// Only the members this package reads are ever decoded, which is most of
// the difference between this package and a reflection-based decode.

// member is one top-level member of a JSON object: its unescaped name and
// the raw JSON text of its value, both sub-strings of the scanned document
// unless the name needed unescaping.
type member struct {
	name  string
	value string
}

// maxMembersPairwise is the member count up to which duplicate names are
// looked for pairwise, which allocates nothing; above it a map is used.
const maxMembersPairwise = 16

// maxNumericDate is 9999-12-31T23:59:59Z, the latest NumericDate accepted.
const maxNumericDate = 253402300799

// memberIter iterates over the top-level members of a JSON object that
// has passed validJSON, without allocating.
type memberIter struct {
	doc string
	i   int   // start of the next member; -1 when done
	err error // set when iteration stopped on malformed input
}

func iterMembers(doc string) memberIter {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return memberIter{i: -1, err: errNotObject}
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return memberIter{i: -1}
	}
	return memberIter{doc: doc, i: i}
}

// next returns the next member. It reports false at the end of the object
// or on malformed input, which it records in it.err.
func (it *memberIter) next() (member, bool) {
	if it.i < 0 {
		return member{}, false
	}
	doc, i := it.doc, it.i
	if i >= len(doc) || doc[i] != '"' {
		return it.fail()
	}
	end := stringEnd(doc, i)
	if end < 0 {
		return it.fail()
	}
	name, ok := jsonString(doc[i:end])
	if !ok {
		return it.fail()
	}
	i = skipSpace(doc, end)
	if i >= len(doc) || doc[i] != ':' {
		return it.fail()
	}
	i = skipSpace(doc, i+1)
	vend := valueEnd(doc, i)
	if vend < 0 {
		return it.fail()
	}
	m := member{name: name, value: doc[i:vend]}
	i = skipSpace(doc, vend)
	switch {
	case i >= len(doc):
		return it.fail()
	case doc[i] == '}':
		it.i = -1
	case doc[i] == ',':
		it.i = skipSpace(doc, i+1)
	default:
		return it.fail()
	}
	return m, true
}

func (it *memberIter) fail() (member, bool) {
	it.i, it.err = -1, errMalformedJSON
	return member{}, false
}

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// validJSON reports whether b is one well-formed JSON value (RFC 8259 §2)
// in valid UTF-8 (§8.1). It accepts exactly what utf8.Valid(b) &&
// json.Valid(b) accept (FuzzValidJSON checks this) at a fraction of the
// cost. UTF-8 matters: encoding/json turns invalid bytes into U+FFFD, which
// could merge member names that look distinct here.
func validJSON(b []byte) bool {
	i, ok := scanValue(b, skipSpaceB(b, 0), 0)
	return ok && skipSpaceB(b, i) == len(b)
}

// scanValue returns the index just past the JSON value at b[i].
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipSpaceB(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = scanString(b, i); !ok {
					return i, false
				}
				i = skipSpaceB(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpaceB(b, i+1)
			}
			if i, ok = scanValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipSpaceB(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == end {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpaceB(b, i+1)
		}
	case c == '"':
		return scanString(b, i)
	case c == '-' || ('0' <= c && c <= '9'):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return i, false
}

// scanString returns the index just past the JSON string at b[i].
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, false
			}
			i += n
		}
	}
	return i, false
}

// scanNumber returns the index just past the JSON number at b[i]:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func skipSpaceB(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at s[i],
// or -1.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at s[i], or
// -1. Nested values are skipped by depth, honouring strings.
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := stringEnd(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// jsonString decodes the raw JSON value v as a string. It reports false if
// v is not a JSON string. Strings without escapes are returned as
// sub-strings of v without allocating.
func jsonString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	body := v[1 : len(v)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	var s string
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonStrings decodes v as a JSON array of strings.
func jsonStrings(v string) ([]string, bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	var out []string
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return []string{}, true
	}
	for i < len(v) {
		end := valueEnd(v, i)
		if end < 0 {
			return nil, false
		}
		s, ok := jsonString(v[i:end])
		if !ok {
			return nil, false
		}
		out = append(out, s)
		i = skipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		if v[i] == ']' {
			return out, true
		}
		if v[i] != ',' {
			return nil, false
		}
		i = skipSpace(v, i+1)
	}
	return nil, false
}

// numericDate decodes a NumericDate (RFC 7519 §2): a JSON number of seconds
// since the epoch, possibly fractional. Strings, negative values, values
// after year 9999 and values that overflow float64 are rejected. The range
// is checked on the float64 before any integer conversion, so the result is
// the same on every architecture.
func numericDate(v string) (time.Time, bool) {
	if v == "" || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= maxNumericDate) {
		return time.Time{}, false
	}
	sec := math.Floor(f)
	nsec := math.Round((f - sec) * 1e9)
	if nsec >= 1e9 {
		sec++
		nsec = 0
	}
	return time.Unix(int64(sec), int64(nsec)).UTC(), true
}

// uniqueNames rejects any two top-level member names of the JSON object
// doc that are equal under Unicode case folding. RFC 7519 §4 lets a parser
// reject duplicate claim names, and encoding/json (used by [Claims.Decode])
// both keeps the last duplicate and matches struct fields
// case-insensitively, so either kind of repeat could make Decode see a
// different value than the one checked here. Small objects are compared
// pairwise without allocating; larger ones through a map of seeded hashes
// of the folded names, confirmed with strings.EqualFold, so the cost stays
// linear for objects with thousands of members.
func uniqueNames(doc string, seed maphash.Seed) error {
	var arr [maxMembersPairwise]string
	names := arr[:0]
	it := iterMembers(doc)
	for m, ok := it.next(); ok; m, ok = it.next() {
		names = append(names, m.name)
	}
	if it.err != nil {
		return it.err
	}
	if len(names) <= maxMembersPairwise {
		for i := 1; i < len(names); i++ {
			for j := range i {
				if strings.EqualFold(names[i], names[j]) {
					return errDuplicateMember
				}
			}
		}
		return nil
	}
	seen := make(map[uint64]int, len(names))
	var h maphash.Hash
	h.SetSeed(seed)
	for i, name := range names {
		h.Reset()
		writeFolded(&h, name)
		sum := h.Sum64()
		if j, ok := seen[sum]; ok && strings.EqualFold(name, names[j]) {
			return errDuplicateMember
		}
		seen[sum] = i
	}
	return nil
}

// writeFolded writes s to h folded so that two strings hash alike when
// strings.EqualFold holds, mirroring encoding/json's fold.go: ASCII letters
// to upper case, other runes to the smallest rune of their folding orbit.
func writeFolded(h *maphash.Hash, s string) {
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			h.WriteByte(byte(r))
			continue
		}
		var buf [utf8.UTFMax]byte
		h.Write(utf8.AppendRune(buf[:0], foldRune(r)))
	}
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// parseConfirmation implements ParseConfirmation on the member scanner.
func parseConfirmation(raw string) (*Confirmation, error) {
	it := iterMembers(raw)
	var jkt string
	var hasJKT, other bool
	for m, ok := it.next(); ok; m, ok = it.next() {
		if m.name != "jkt" {
			other = true
			continue
		}
		s, ok := jsonString(m.value)
		if !ok {
			return nil, errConfirmationJKT
		}
		jkt, hasJKT = s, true
	}
	if it.err != nil {
		return nil, errConfirmationType
	}
	if uniqueNames(raw, maphash.MakeSeed()) != nil {
		return nil, errDuplicateMember
	}
	if other {
		return nil, errConfirmationMethod
	}
	if !hasJKT || jkt == "" {
		return nil, errConfirmationJKT
	}
	if _, err := b64.DecodeString(jkt); err != nil {
		return nil, errConfirmationJKT
	}
	return &Confirmation{JKT: jkt}, nil
}
