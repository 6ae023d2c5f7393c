package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

var (
	errNotObject = fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	errDupKey    = fmt.Errorf("%w: repeated member", ErrInvalidMessage)
	errCaseKey   = fmt.Errorf("%w: member name in another case", ErrInvalidMessage)
	errNotString = fmt.Errorf("%w: member is not a string", ErrInvalidMessage)
	errBadString = fmt.Errorf("%w: string is not valid UTF-8", ErrInvalidMessage)
	errNotJSON   = fmt.Errorf("%w: invalid JSON", ErrMalformedBody)
	errReadBody  = fmt.Errorf("%w: reading body failed", ErrMalformedBody)
)

// metaVersionKey is the _meta member carrying the protocol version (MCP
// 2026-07-28 §Request Metadata).
const metaVersionKey = "io.modelcontextprotocol/protocolVersion"

// message is what the middleware reads from a JSON-RPC message. Byte slices
// point into the body, or hold a decoded copy when the JSON string had
// escapes or non-ASCII bytes.
type message struct {
	method  []byte
	id      []byte // raw JSON value
	name    []byte // params.name
	uri     []byte // params.uri
	version []byte // params._meta[io.modelcontextprotocol/protocolVersion]

	hasMethod, hasID, hasName, hasURI, hasVersion bool
	nameNotString, uriNotString                   bool
}

// Member names the middleware authorizes on, per object level. Another
// spelling of one of them under Unicode case folding, which encoding/json
// would accept as the same field, is refused, as is a repetition, which
// JSON parsers resolve differently (RFC 8259 §4).
var (
	topNames    = []string{"method", "params", "id"}
	paramsNames = []string{"name", "uri", "_meta"}
	metaNames   = []string{metaVersionKey}
)

// readBody reads at most limit bytes of r's body; one byte more is
// ErrBodyTooLarge.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	var buf []byte
	if n := r.ContentLength; n > limit {
		return nil, ErrBodyTooLarge
	} else if n >= 0 {
		buf = make([]byte, 0, n+1) // +1 so that a lying ContentLength does not reallocate before EOF
	} else {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, ErrBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, fmt.Errorf("%w: %w", ErrBodyTooLarge, err)
			}
			return nil, fmt.Errorf("%w: %w", errReadBody, err)
		}
	}
}

// parseMessage reads the members the middleware authorizes on from body.
// body must be one JSON object (a JSON array is ErrBatch).
func parseMessage(body []byte, msg *message) error {
	if !json.Valid(body) {
		return errNotJSON
	}
	i := skipWS(body, 0)
	switch body[i] {
	case '{':
	case '[':
		return ErrBatch
	default:
		return errNotObject
	}
	var seen [3]bool
	it := objIter{b: body, i: i + 1}
	for it.next() {
		idx, err := classify(it.key, it.keyEsc, topNames, &seen)
		if err != nil {
			return err
		}
		v := body[it.vs:it.ve]
		switch idx {
		case 0:
			if msg.method, err = stringValue(v); err != nil {
				return err
			}
			msg.hasMethod = true
		case 1:
			if v[0] == '{' {
				if err := parseParams(body, it.vs, msg); err != nil {
					return err
				}
			}
		case 2:
			msg.id, msg.hasID = v, true
		}
	}
	return nil
}

func parseParams(body []byte, start int, msg *message) error {
	var seen [3]bool
	it := objIter{b: body, i: start + 1}
	for it.next() {
		idx, err := classify(it.key, it.keyEsc, paramsNames, &seen)
		if err != nil {
			return err
		}
		v := body[it.vs:it.ve]
		switch idx {
		case 0:
			msg.hasName = true
			if v[0] != '"' {
				msg.nameNotString = true
			} else if msg.name, err = stringValue(v); err != nil {
				return err
			}
		case 1:
			msg.hasURI = true
			if v[0] != '"' {
				msg.uriNotString = true
			} else if msg.uri, err = stringValue(v); err != nil {
				return err
			}
		case 2:
			if v[0] == '{' {
				if err := parseMeta(body, it.vs, msg); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func parseMeta(body []byte, start int, msg *message) error {
	var seen [3]bool
	it := objIter{b: body, i: start + 1}
	for it.next() {
		idx, err := classify(it.key, it.keyEsc, metaNames, &seen)
		if err != nil {
			return err
		}
		if idx == 0 {
			if msg.version, err = stringValue(body[it.vs:it.ve]); err != nil {
				return err
			}
			msg.hasVersion = true
		}
	}
	return nil
}

// classify returns the index of key in names, or -1. A repeated name, or a
// name that equals one of names only under Unicode case folding, is an
// error.
func classify(key []byte, esc bool, names []string, seen *[3]bool) (int, error) {
	if esc {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return -1, errNotJSON
		}
		key = []byte(s)
	} else {
		key = key[1 : len(key)-1]
	}
	for i, n := range names {
		if string(key) == n {
			if seen[i] {
				return -1, errDupKey
			}
			seen[i] = true
			return i, nil
		}
		if bytes.EqualFold(key, []byte(n)) {
			return -1, errCaseKey
		}
	}
	return -1, nil
}

// stringValue decodes the JSON string v (quotes included) as encoding/json
// would. Strings that decode to invalid UTF-8 or contain U+FFFD (the
// replacement for invalid input) are refused, so that no two JSON decoders
// can disagree on the value.
func stringValue(v []byte) ([]byte, error) {
	if v[0] != '"' {
		return nil, errNotString
	}
	raw := v[1 : len(v)-1]
	simple := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return raw, nil
	}
	if !utf8.Valid(raw) {
		return nil, errBadString
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil, errNotJSON
	}
	if !utf8.ValidString(s) || bytes.ContainsRune([]byte(s), utf8.RuneError) {
		return nil, errBadString
	}
	return []byte(s), nil
}

// objIter iterates over the members of a JSON object in a body that
// json.Valid accepted. i starts just after '{'.
type objIter struct {
	b       []byte
	i       int
	started bool
	key     []byte // raw key, quotes included
	keyEsc  bool
	vs, ve  int // value span
}

func (it *objIter) next() bool {
	b := it.b
	i := skipWS(b, it.i)
	if b[i] == '}' {
		it.i = i + 1
		return false
	}
	if it.started {
		i = skipWS(b, i+1) // ','
	}
	it.started = true
	ks := i
	ke, esc := skipString(b, i)
	it.key, it.keyEsc = b[ks:ke], esc
	i = skipWS(b, ke)
	i = skipWS(b, i+1) // ':'
	it.vs = i
	it.ve = skipValue(b, i)
	it.i = it.ve
	return true
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'
// and whether it contains escapes or non-ASCII bytes.
func skipString(b []byte, i int) (int, bool) {
	esc := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			i++
		case c >= utf8.RuneSelf:
			esc = true
		}
	}
	return i, esc
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		e, _ := skipString(b, i)
		return e
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i, _ = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
			i++
		}
		return i
	}
}
