package answer

import (
	"errors"
	"fmt"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// ErrInvalid reports a message, or a member of one, that is not what
// JSON-RPC 2.0 and MCP define (see [Parse]). It wraps the strictjson
// sentinel when the JSON itself was refused.
var ErrInvalid = errors.New("answer: invalid JSON-RPC message")

// Message is the envelope of one JSON-RPC 2.0 message as [Parse] reads
// it: a request or notification (Method set) or a response (Result or
// Error set). Raw values are sub-slices of the message, valid as long as
// it is; Method is decoded.
type Message struct {
	Method    []byte // decoded "method"
	ID        []byte // raw "id", nil when absent
	Params    []byte // raw "params", nil when absent
	Result    []byte // raw "result", nil when absent
	Error     []byte // raw "error", nil when absent
	HasMethod bool
	// ResultStart and ResultEnd are the offsets of Result in the message
	// (msg[ResultStart:ResultEnd]), for [Splice].
	ResultStart, ResultEnd int
}

// envelope is the names Parse reads (and checks for case variants).
var envelope = []string{"jsonrpc", "method", "id", "params", "result", "error"}

// Parse reads msg, which must be one JSON object by the strictjson policy
// (no repeated or case-variant member names, valid UTF-8), into m. pool
// supplies reusable tokenizer buffers (nil: fresh ones). A "method" that
// is not a string is [ErrInvalid]. It does not check that the members
// present make a valid JSON-RPC message; callers check what they use.
func Parse(pool *strictjson.Pool, msg []byte, m *Message) error {
	*m = Message{}
	err := memberSpans(pool, msg, envelope, func(name []byte, start, end int) error {
		v := msg[start:end:end]
		switch string(name) {
		case "method":
			s, ok := stringBytes(v)
			if !ok {
				return ErrInvalid
			}
			m.Method, m.HasMethod = s, true
		case "id":
			m.ID = v
		case "params":
			m.Params = v
		case "result":
			m.Result, m.ResultStart, m.ResultEnd = v, start, end
		case "error":
			m.Error = v
		}
		return nil
	})
	return wrap(err)
}

// Member returns the raw value of member name of the JSON object obj and
// its byte offsets in obj (obj[start:end]), or ok false when obj has no
// such member. read lists every name the caller will read from obj, name
// included, so that their case variants are refused (strictjson rule 4).
// obj must be an object by the strictjson policy ([ErrInvalid] otherwise).
func Member(pool *strictjson.Pool, obj []byte, read []string, name string) (value []byte, start, end int, ok bool, err error) {
	err = memberSpans(pool, obj, read, func(n []byte, s, e int) error {
		if string(n) == name {
			value, start, end, ok = obj[s:e:e], s, e, true
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, false, wrap(err)
	}
	return value, start, end, ok, nil
}

// Splice returns a new slice: doc with doc[start:end] replaced by repl.
func Splice(doc []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(doc)-(end-start)+len(repl))
	out = append(out, doc[:start]...)
	out = append(out, repl...)
	return append(out, doc[end:]...)
}

// FilterArray returns the JSON array arr with only the elements keep
// accepts, in order, as a new compact array of the elements' raw bytes,
// and whether any element was removed. arr must be a JSON array that has
// passed the strictjson policy (as a member value read by [Member] has);
// anything else is [ErrInvalid]. An error of keep is returned as is.
func FilterArray(arr []byte, keep func(elem []byte) (bool, error)) (out []byte, removed bool, err error) {
	elems, ok := strictjson.Elements(arr)
	if !ok {
		return nil, false, ErrInvalid
	}
	out = make([]byte, 0, len(arr))
	out = append(out, '[')
	n := 0
	for _, e := range elems {
		k, err := keep(e)
		if err != nil {
			return nil, false, err
		}
		if !k {
			removed = true
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
		n++
	}
	return append(out, ']'), removed, nil
}

// String decodes v, a raw JSON value read by [Parse] or [Member], as a
// string, or reports false if it is not one.
func String(v []byte) (string, bool) { return strictjson.String(v) }

// stringBytes is String as bytes, sharing v's memory without escapes.
func stringBytes(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	raw := v[1 : len(v)-1]
	for _, c := range raw {
		if c == '\\' {
			s, ok := strictjson.String(v)
			return []byte(s), ok
		}
	}
	return raw, true
}

func memberSpans(pool *strictjson.Pool, doc []byte, read []string, fn func(name []byte, start, end int) error) error {
	if pool == nil {
		return strictjson.MemberSpans(doc, read, fn)
	}
	return pool.MemberSpans(doc, read, fn)
}

// wrap makes a strictjson failure an [ErrInvalid] that still matches the
// strictjson sentinel.
func wrap(err error) error {
	if err == nil || errors.Is(err, ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}
