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
	errNotObject = fmt.Errorf("%w: not a JSON object", errInvalidMessage)
	// errParamsNotObject: "params" is present and neither an object nor null.
	errParamsNotObject = fmt.Errorf("%w: params not an object", errInvalidMessage)
	errDupKey          = fmt.Errorf("%w: repeated member", errInvalidMessage)
	errCaseKey         = fmt.Errorf("%w: case-variant member name", errInvalidMessage)
	errNotString       = fmt.Errorf("%w: member is not a string", errInvalidMessage)
	errBadString       = fmt.Errorf("%w: invalid UTF-8 or U+FFFD", errInvalidMessage)
	errNotJSON         = fmt.Errorf("%w: invalid JSON", errMalformedBody)
	errReadBody        = fmt.Errorf("%w: reading body failed", errMalformedBody)
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

// message is what the middleware reads from a JSON-RPC message, in one
// pass over the body (parseMessage). Byte slices point into the body, or
// hold a decoded copy when the JSON string had escapes or non-ASCII bytes.
type message struct {
	body    []byte // the POST body the message was read from, replayed to the next handler
	method  field  // "method": a present method is a string (anything else is refused)
	id      []byte // "id", the raw JSON value; nil when absent
	name    field  // params.name
	uri     field  // params.uri
	version field  // params._meta[io.modelcontextprotocol/protocolVersion], a string (or refused)
	ref     ref    // params.ref (completion/complete)
	taskID  field  // params.taskId (tasks/get, tasks/result, tasks/cancel, tasks/update)
	// subs is the raw value of params.notifications.resourceSubscriptions
	// (subscriptions/listen, 2026-07-28), nil when absent; decoded only
	// for a request without a token (public.go).
	subs []byte
	// Tasks (tasks.go): params.task is present (a task-augmented request,
	// 2025-11-25); params._meta's client capabilities declare the tasks
	// extension (io.modelcontextprotocol/tasks, 2026-07-28: the server may
	// answer with a task).
	task, tasksExt bool
	// args is the raw params.arguments (tools/call, prompts/get), nil
	// when absent; decoded only when a Rule reads it (rules.go).
	args []byte
	// sid is not read from the body: it is the request's Mcp-Session-Id
	// as bindSession accepted it ("" for none), for serveSession.
	sid string
}

// field is one member the peek reads: whether it is present, whether it is
// a JSON string and, if it is, its decoded value.
type field struct {
	v       []byte
	present bool
	str     bool // v is its decoded value
}

// stringField is the field of a member present as the string s.
func stringField(s string) field { return field{v: []byte(s), present: true, str: true} }

// notString reports a member present as anything but a string.
func (f field) notString() bool { return f.present && !f.str }

// ref is params.ref of completion/complete (MCP: a PromptReference
// {"type":"ref/prompt","name":…} or a ResourceTemplateReference
// {"type":"ref/resource","uri":…}).
type ref struct {
	present        bool // params.ref is an object
	typ, name, uri field
}

// readBody reads at most limit bytes of r's body; one byte more is
// errBodyTooLarge.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	var buf []byte
	if n := r.ContentLength; n > limit {
		return nil, errBodyTooLarge
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
			return nil, errBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, fmt.Errorf("%w: %w", errBodyTooLarge, err)
			}
			return nil, fmt.Errorf("%w: %w", errReadBody, err)
		}
	}
}

// parseMessage reads the members the middleware authorizes on from body,
// with internal/strictjson, the module's one JSON reader, in one pass of
// its tokenizer ([strictjson.Walk]): body must be one JSON object (a JSON
// array is errBatch) in valid UTF-8, without repeated member names at any
// depth, and without two names equal under case folding in the objects
// read here (the message, "params", "params._meta", its client
// capabilities and their "extensions", and "params.ref"). Names are
// matched exactly, as the go-sdk's decoder (segmentio/encoding,
// case-sensitive) matches them, and FuzzPeekAgreesWithGoSDK checks that
// both read the same method, name, URI, protocol version and completion
// reference.
func parseMessage(body []byte, msg *message) error { return parseMessageWith(nil, body, msg) }

// parseMessageWith is parseMessage reading with pool's buffers (a
// Middleware's), or fresh ones when pool is nil.
func parseMessageWith(pool *strictjson.Pool, body []byte, msg *message) error {
	msg.body = body
	read := []string{"method", "params", "id"}
	var err error
	if pool == nil {
		err = strictjson.Walk(body, read, msg.member)
	} else {
		err = pool.Walk(body, read, msg.member)
	}
	return peekErr(body, err)
}

// member reads one member of the message.
func (msg *message) member(v *strictjson.Value, name []byte) error {
	switch string(name) {
	case "method":
		return msg.method.readString(v)
	case "params":
		// MCP's params are an object (JSON-RPC's by-name form); null
		// decodes as absent. Any other value (a number, a string, an
		// array) is refused: the SDKs refuse it when they decode params,
		// so a message with it must not be authorized as if it had none.
		if k := v.Kind(); k != '{' && k != 'n' {
			if _, err := v.Raw(); err != nil {
				return err
			}
			return errParamsNotObject
		}
		return v.Members([]string{"name", "uri", "_meta", "ref", "task", "taskId", "notifications", "arguments"}, msg.param)
	case "id":
		var err error
		msg.id, err = v.Raw()
		return err
	}
	return nil
}

// param reads one member of params (an object; any other params is
// ignored).
func (msg *message) param(v *strictjson.Value, name []byte) error {
	switch string(name) {
	case "notifications":
		if v.Kind() == '{' {
			return v.Members([]string{"resourceSubscriptions"}, msg.notification)
		}
	case "task":
		msg.task = true
	case "arguments":
		raw, err := v.Raw()
		msg.args = raw
		return err
	case "_meta":
		return v.Members([]string{metaVersionKey, metaClientCapabilities}, msg.meta)
	case "ref":
		if v.Kind() == '{' {
			msg.ref.present = true
			return v.Members([]string{"type", "name", "uri"}, msg.ref.member)
		}
	default:
		return readNamed(v, name, [...]namedField{{"name", &msg.name}, {"uri", &msg.uri}, {"taskId", &msg.taskID}})
	}
	return nil
}

// notification reads params.notifications of subscriptions/listen
// (2026-07-28): the raw value of its resourceSubscriptions.
func (msg *message) notification(v *strictjson.Value, name []byte) error {
	if string(name) != "resourceSubscriptions" {
		return nil
	}
	raw, err := v.Raw()
	msg.subs = raw
	return err
}

// member reads one member of params.ref: its type, name and URI.
func (r *ref) member(v *strictjson.Value, name []byte) error {
	return readNamed(v, name, [...]namedField{{"type", &r.typ}, {"name", &r.name}, {"uri", &r.uri}})
}

// namedField is a field and the member name it is read from.
type namedField struct {
	name string
	f    *field
}

// readNamed reads v into the one of fields named name, if any.
func readNamed(v *strictjson.Value, name []byte, fields [3]namedField) error {
	for _, nf := range fields {
		if string(name) == nf.name {
			return nf.f.read(v)
		}
	}
	return nil
}

// meta reads one member of params._meta: the protocol version, and the
// per-request client capabilities of 2026-07-28, whose "extensions" may
// list the tasks extension, with which the server may answer with a task
// (SEP-2663).
func (msg *message) meta(v *strictjson.Value, name []byte) error {
	switch string(name) {
	case metaVersionKey:
		return msg.version.readString(v)
	case metaClientCapabilities:
		return v.Members([]string{"extensions"}, msg.capability)
	}
	return nil
}

func (msg *message) capability(v *strictjson.Value, name []byte) error {
	if string(name) != "extensions" {
		return nil
	}
	return v.Members([]string{tasksExtension}, msg.extension)
}

func (msg *message) extension(_ *strictjson.Value, name []byte) error {
	if string(name) == tasksExtension {
		msg.tasksExt = true
	}
	return nil
}

// read reads a member that may have any value.
func (f *field) read(v *strictjson.Value) error {
	raw, err := v.Raw()
	if err != nil {
		return err
	}
	f.present = true
	if raw[0] != '"' {
		return nil
	}
	if f.v, err = stringValue(raw); err != nil {
		return err
	}
	f.str = true
	return nil
}

// readString reads a member whose value must be a string: anything else
// is errNotString.
func (f *field) readString(v *strictjson.Value) error {
	if err := f.read(v); err != nil {
		return err
	}
	if !f.str {
		return errNotString
	}
	return nil
}

// peekErr maps an error of strictjson to the middleware's: not JSON is
// errMalformedBody (-32700); a valid JSON array at the top is errBatch;
// anything else (not an object, invalid UTF-8, a repeated or case-variant
// name) is errInvalidMessage (-32600). Errors of this file pass unchanged.
func peekErr(doc []byte, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrSyntax):
		return errNotJSON
	case errors.Is(err, strictjson.ErrNotObject), errors.Is(err, strictjson.ErrInvalidUTF8),
		errors.Is(err, strictjson.ErrDuplicateName), errors.Is(err, strictjson.ErrCaseVariant):
		if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			return errBatch
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
		// ASCII holds no U+FFFD (bytes.ContainsRune decodes rune by rune).
		if !strictjson.IsASCII(raw) && bytes.ContainsRune(raw, utf8.RuneError) {
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
