package stdiobridge

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// errNotJSONRPC reports a line or body that is not one JSON-RPC 2.0
// message (a batch included: MCP 2025-06-18 and later have none).
var errNotJSONRPC = errors.New("stdiobridge: not a JSON-RPC 2.0 message")

type kind uint8

const (
	kindRequest kind = iota + 1
	kindNotification
	kindResponse
)

// message is one JSON-RPC message as read: raw bytes (compact, one
// line) and the spans the bridge rewrites.
type message struct {
	raw               []byte
	kind              kind
	method            string
	id                []byte // raw id, nil for a notification
	idStart, idEnd    int
	params            []byte // raw params, nil when absent
	paramsStart       int
	paramsEnd         int
	hasResult, hasErr bool
}

var envelopeNames = []string{"jsonrpc", "method", "id", "params", "result", "error"}

// parseMessage reads raw by the strictjson policy into a message. raw
// is kept (not copied). A line carrying a carriage return inside is
// compacted first, so that it cannot break an SSE event.
func parseMessage(pool *strictjson.Pool, raw []byte) (message, error) {
	m := message{raw: raw, paramsStart: -1}
	var version []byte
	hasMethod := false
	err := pool.MemberSpans(raw, envelopeNames, func(name []byte, s, e int) error {
		v := raw[s:e:e]
		switch string(name) {
		case "jsonrpc":
			version = v
		case "method":
			str, ok := strictjson.String(v)
			if !ok || str == "" {
				return errNotJSONRPC
			}
			m.method, hasMethod = str, true
		case "id":
			m.id, m.idStart, m.idEnd = v, s, e
		case "params":
			m.params, m.paramsStart, m.paramsEnd = v, s, e
		case "result":
			m.hasResult = true
		case "error":
			m.hasErr = true
		}
		return nil
	})
	if err != nil {
		return message{}, errNotJSONRPC
	}
	if v, ok := strictjson.String(version); !ok || v != "2.0" {
		return message{}, errNotJSONRPC
	}
	switch {
	case hasMethod && !m.hasResult && !m.hasErr:
		if m.params != nil && m.params[0] != '{' && m.params[0] != '[' {
			return message{}, errNotJSONRPC
		}
		if m.id == nil {
			m.kind = kindNotification
		} else if validID(m.id) {
			m.kind = kindRequest
		} else {
			return message{}, errNotJSONRPC
		}
	case !hasMethod && m.params == nil && m.hasResult != m.hasErr && m.id != nil:
		if !validID(m.id) && !(m.hasErr && string(m.id) == "null") {
			return message{}, errNotJSONRPC
		}
		m.kind = kindResponse
	default:
		return message{}, errNotJSONRPC
	}
	if bytes.IndexByte(raw, '\r') >= 0 || bytes.IndexByte(raw, '\n') >= 0 {
		c, err := strictjson.Compact(raw)
		if err != nil {
			return message{}, errNotJSONRPC
		}
		return parseMessage(pool, c)
	}
	return m, nil
}

// validID reports whether v, a raw JSON value, is a string or a number
// (MCP: "MUST be a string or integer"; null is refused).
func validID(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	c := v[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// withID returns a copy of m's bytes with its id replaced by id.
func (m *message) withID(id []byte) []byte {
	return splice(m.raw, m.idStart, m.idEnd, id)
}

// paramMember returns the raw value of params.name (and its span in
// m.raw), or nil.
func (m *message) paramMember(pool *strictjson.Pool, read []string, name string) (v []byte, start, end int) {
	if m.params == nil || m.params[0] != '{' {
		return nil, 0, 0
	}
	_ = pool.MemberSpans(m.params, read, func(n []byte, s, e int) error {
		if string(n) == name {
			v, start, end = m.params[s:e:e], m.paramsStart+s, m.paramsStart+e
		}
		return nil
	})
	return v, start, end
}

var (
	metaNames     = []string{"_meta"}
	progressNames = []string{"progressToken"}
	cancelNames   = []string{"requestId", "reason"}
)

// progressToken returns the raw params._meta.progressToken of a request,
// or nil.
func (m *message) progressToken(pool *strictjson.Pool) []byte {
	meta, _, _ := m.paramMember(pool, metaNames, "_meta")
	if meta == nil || meta[0] != '{' {
		return nil
	}
	var tok []byte
	_ = pool.MemberSpans(meta, progressNames, func(n []byte, s, e int) error {
		if string(n) == "progressToken" {
			tok = meta[s:e:e]
		}
		return nil
	})
	if !validID(tok) {
		return nil
	}
	return tok
}

func splice(doc []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(doc)-(end-start)+len(repl))
	out = append(out, doc[:start]...)
	out = append(out, repl...)
	return append(out, doc[end:]...)
}

// errorResponse is a JSON-RPC error answer to id with a fixed message.
func errorResponse(id []byte, code int, msg string) []byte {
	b := make([]byte, 0, 96+len(id))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		id = []byte("null")
	}
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = appendInt(b, int64(code))
	b = append(b, `,"message":"`...)
	b = append(b, msg...) // fixed ASCII text without quotes or backslashes
	return append(b, `"}}`...)
}

func appendInt(b []byte, n int64) []byte {
	return strconv.AppendInt(b, n, 10)
}
