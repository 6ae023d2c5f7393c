package middleware

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

var (
	errNotObject = fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	errDupKey    = fmt.Errorf("%w: repeated member", ErrInvalidMessage)
	errCaseKey   = fmt.Errorf("%w: case-variant member name", ErrInvalidMessage)
	errNotString = fmt.Errorf("%w: member is not a string", ErrInvalidMessage)
	errBadString = fmt.Errorf("%w: invalid UTF-8 or U+FFFD", ErrInvalidMessage)
	errNotJSON   = fmt.Errorf("%w: invalid JSON", ErrMalformedBody)
	errReadBody  = fmt.Errorf("%w: reading body failed", ErrMalformedBody)
)

// metaVersionKey is the _meta member carrying the protocol version (MCP
// 2026-07-28 §Request Metadata).
const metaVersionKey = "io.modelcontextprotocol/protocolVersion"

// metaClientCapabilities is the _meta member carrying a 2026-07-28
// request's client capabilities, and tasksExtension the identifier of the
// tasks extension in its "extensions" (SEP-2663).
const (
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	tasksExtension         = "io.modelcontextprotocol/tasks"
)

// message is what the middleware reads from a JSON-RPC message. Byte slices
// point into the body, or hold a decoded copy when the JSON string had
// escapes or non-ASCII bytes.
type message struct {
	body    []byte // the POST body the message was read from, replayed to the next handler
	method  []byte
	id      []byte // raw JSON value
	name    []byte // params.name
	uri     []byte // params.uri
	version []byte // params._meta[io.modelcontextprotocol/protocolVersion]
	refType []byte // params.ref.type (completion/complete)
	refName []byte // params.ref.name
	refURI  []byte // params.ref.uri (a resource template)
	taskID  []byte // params.taskId (tasks/get, tasks/result, tasks/cancel, tasks/update)

	hasMethod, hasID, hasName, hasURI, hasVersion bool
	nameNotString, uriNotString                   bool
	hasRef, hasRefType, hasRefName, hasRefURI     bool // params.ref is an object; its members
	refTypeNotString, refNameNotString            bool
	refURINotString                               bool
	// Tasks (tasks.go): params.task is present (a task-augmented request,
	// 2025-11-25), params._meta's client capabilities declare the tasks
	// extension (io.modelcontextprotocol/tasks, 2026-07-28: the server may
	// answer with a task), params.taskId is present / not a string.
	hasTask, tasksExt, hasTaskID, taskIDNotString bool
}

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

// parseMessage reads the members the middleware authorizes on from body,
// with internal/strictjson, the module's one JSON reader: body must be one
// JSON object (a JSON array is ErrBatch) in valid UTF-8, without repeated
// member names at any depth, and without two names equal under case
// folding in the objects read here (the message, "params",
// "params._meta" and "params.ref"). Names are matched exactly, as the go-sdk's decoder
// (segmentio/encoding, case-sensitive) matches them, and
// FuzzPeekAgreesWithGoSDK checks that both read the same method, name,
// URI, protocol version and completion reference.
func parseMessage(body []byte, msg *message) error { return parseMessageWith(nil, body, msg) }

// parseMessageWith is parseMessage reading with pool's buffers (a
// Middleware's), or fresh ones when pool is nil.
func parseMessageWith(pool *strictjson.Pool, body []byte, msg *message) error {
	msg.body = body
	err := members(pool, body, []string{"method", "params", "id"}, func(name, v []byte) error {
		var err error
		switch string(name) {
		case "method":
			if msg.method, err = stringValue(v); err != nil {
				return err
			}
			msg.hasMethod = true
		case "params":
			if v[0] == '{' {
				return parseParams(pool, v, msg)
			}
		case "id":
			msg.id, msg.hasID = v, true
		}
		return nil
	})
	return peekErr(body, err)
}

func parseParams(pool *strictjson.Pool, params []byte, msg *message) error {
	err := members(pool, params, []string{"name", "uri", "_meta", "ref", "task", "taskId"}, func(name, v []byte) error {
		var err error
		switch string(name) {
		case "task":
			msg.hasTask = true
		case "taskId":
			msg.hasTaskID = true
			if v[0] != '"' {
				msg.taskIDNotString = true
			} else if msg.taskID, err = stringValue(v); err != nil {
				return err
			}
		case "name":
			msg.hasName = true
			if v[0] != '"' {
				msg.nameNotString = true
			} else if msg.name, err = stringValue(v); err != nil {
				return err
			}
		case "uri":
			msg.hasURI = true
			if v[0] != '"' {
				msg.uriNotString = true
			} else if msg.uri, err = stringValue(v); err != nil {
				return err
			}
		case "_meta":
			if v[0] == '{' {
				return parseMeta(pool, v, msg)
			}
		case "ref":
			if v[0] == '{' {
				return parseRef(pool, v, msg)
			}
		}
		return nil
	})
	return peekErr(params, err)
}

// parseRef reads params.ref of completion/complete (MCP: a PromptReference
// {"type":"ref/prompt","name":…} or a ResourceTemplateReference
// {"type":"ref/resource","uri":…}): its type, name and URI.
func parseRef(pool *strictjson.Pool, ref []byte, msg *message) error {
	msg.hasRef = true
	err := members(pool, ref, []string{"type", "name", "uri"}, func(name, v []byte) error {
		var err error
		switch string(name) {
		case "type":
			msg.hasRefType = true
			if v[0] != '"' {
				msg.refTypeNotString = true
			} else if msg.refType, err = stringValue(v); err != nil {
				return err
			}
		case "name":
			msg.hasRefName = true
			if v[0] != '"' {
				msg.refNameNotString = true
			} else if msg.refName, err = stringValue(v); err != nil {
				return err
			}
		case "uri":
			msg.hasRefURI = true
			if v[0] != '"' {
				msg.refURINotString = true
			} else if msg.refURI, err = stringValue(v); err != nil {
				return err
			}
		}
		return nil
	})
	return peekErr(ref, err)
}

func parseMeta(pool *strictjson.Pool, meta []byte, msg *message) error {
	err := members(pool, meta, []string{metaVersionKey, metaClientCapabilities}, func(name, v []byte) error {
		if string(name) == metaClientCapabilities {
			if v[0] == '{' {
				return parseCapabilities(pool, v, msg)
			}
			return nil
		}
		if string(name) != metaVersionKey {
			return nil
		}
		var err error
		if msg.version, err = stringValue(v); err != nil {
			return err
		}
		msg.hasVersion = true
		return nil
	})
	return peekErr(meta, err)
}

// parseCapabilities reads the per-request client capabilities of
// 2026-07-28 (params._meta[io.modelcontextprotocol/clientCapabilities]):
// whether "extensions" lists the tasks extension, with which the server
// may answer with a task (SEP-2663).
func parseCapabilities(pool *strictjson.Pool, caps []byte, msg *message) error {
	err := members(pool, caps, []string{"extensions"}, func(name, v []byte) error {
		if string(name) != "extensions" || v[0] != '{' {
			return nil
		}
		err := members(pool, v, []string{tasksExtension}, func(name, _ []byte) error {
			if string(name) == tasksExtension {
				msg.tasksExt = true
			}
			return nil
		})
		return peekErr(v, err)
	})
	return peekErr(caps, err)
}

// members is strictjson's Members with pool's buffers, or fresh ones when
// pool is nil.
func members(pool *strictjson.Pool, doc []byte, read []string, fn func(name, value []byte) error) error {
	if pool == nil {
		return strictjson.Members(doc, read, fn)
	}
	return pool.Members(doc, read, fn)
}

// peekErr maps an error of strictjson to the middleware's: not JSON is
// ErrMalformedBody (-32700); a valid JSON array at the top is ErrBatch;
// anything else (not an object, invalid UTF-8, a repeated or case-variant
// name) is ErrInvalidMessage (-32600). Errors of this file pass unchanged.
func peekErr(doc []byte, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrSyntax):
		return errNotJSON
	case errors.Is(err, strictjson.ErrNotObject), errors.Is(err, strictjson.ErrInvalidUTF8),
		errors.Is(err, strictjson.ErrDuplicateName), errors.Is(err, strictjson.ErrCaseVariant):
		if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			return ErrBatch
		}
		switch {
		case errors.Is(err, strictjson.ErrNotObject):
			return errNotObject
		case errors.Is(err, strictjson.ErrInvalidUTF8):
			return errBadString
		case errors.Is(err, strictjson.ErrDuplicateName):
			return errDupKey
		}
		return errCaseKey
	}
	return err
}

// stringValue decodes the JSON string v (quotes included), which
// strictjson has checked. A string that contains U+FFFD, the replacement
// character lenient decoders put in place of invalid input, is refused too,
// so that no decoder downstream can disagree on the value.
func stringValue(v []byte) ([]byte, error) {
	if v[0] != '"' {
		return nil, errNotString
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		if bytes.ContainsRune(raw, utf8.RuneError) {
			return nil, errBadString
		}
		return raw, nil
	}
	s, ok := strictjson.String(v)
	if !ok {
		return nil, errNotJSON // unreachable: strictjson checked v
	}
	if strings.ContainsRune(s, utf8.RuneError) {
		return nil, errBadString
	}
	return []byte(s), nil
}
