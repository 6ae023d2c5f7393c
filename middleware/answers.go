package middleware

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	rpcanswer "github.com/mcpguard/mcpguard/internal/answer"
)

// The answer layer (docs/policy.md, "What the middleware reads in
// answers"). Every read or rewrite of a server's answer is here, for every
// handler behind Middleware.Handler, whatever its SDK or language, built on
// internal/answer:
//
//   - task binding (tasks.go): the CreateTaskResult of a request that may
//     create a task is recorded; tasks/list answers and result.tasks
//     arrays keep the caller's tasks; other principals' task notifications
//     are dropped from streams;
//   - lists (lists.go): tools/list, prompts/list, resources/list and
//     resources/templates/list answers show each entry as listEntry
//     decides in the mode of Config.Lists;
//   - event IDs (events.go): the IDs of the events answering a request
//     without a session are recorded with their recipient.
//
// A response is matched to its request by JSON-RPC id value (sameID). An
// answer that must be read (a list, tasks/list, a task-creating request)
// and cannot be (compressed, another media type, over the size bound,
// unparsable) is replaced by 502; a response in it that does not answer
// the request is replaced by a JSON-RPC "Internal error" with its id.

// maxFreeAnswerWriters bounds the free list of answer writers.
const maxFreeAnswerWriters = 64

// errForeignResponse: a list request's answer carries a response whose id
// is not the request's; it is replaced (fail closed) rather than passed
// unfiltered.
var errForeignResponse = errors.New("middleware: response to another request in a list answer")

// serveNext runs next for an authorized request, reading its answer: a
// request that may create a task, tasks/list and the four entry lists have
// their JSON or SSE answer read; every other GET and POST has its SSE
// answer filtered of other principals' task notifications (a JSON answer
// carries only the response and passes untouched). The per-request writer
// comes from a free list, so an ordinary request allocates nothing here.
//
// It then runs the session binding's serveSession with msg.sid, the
// session ID bindSession accepted. p.grant is the
// request's operation.
func (m *Middleware) serveNext(w http.ResponseWriter, r *http.Request, next http.Handler, p *Principal, msg *message) {
	sid := msg.sid
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		m.serveSession(w, r, next, p, sid)
		return
	}
	aw := m.answerWriters.get()
	aw.m, aw.ctx, aw.p, aw.hdr = m, r.Context(), p, r.Header
	opts := rpcanswer.Options{SSEOnly: true}
	if msg.method.present {
		if msg.task || msg.tasksExt {
			aw.create, aw.scopes, aw.reqID = true, p.grant.op.key, msg.id
			opts.SSEOnly = false
		}
		if string(msg.method.v) == methodTasksList {
			aw.list = true
			opts.SSEOnly, opts.RefuseOther = false, true
		}
		if k := listKindOf(msg.method.v); k != nil {
			aw.entries, aw.reqID = k, msg.id
			opts.SSEOnly, opts.RefuseOther = false, true
		}
	}
	if !opts.SSEOnly {
		// The answer must be read: ask for it uncompressed (a compressed
		// one is unreadable, hence 502). r is the middleware's own copy;
		// its header map is the caller's, so it is copied first.
		if _, ok := r.Header["Accept-Encoding"]; ok {
			r.Header = r.Header.Clone()
			r.Header.Del("Accept-Encoding")
		}
	}
	if r.Method == http.MethodPost && msg.method.present && msg.id != nil {
		// A request: an SSE answer whose response is over the size bound
		// ends with an error for it instead (answers.md, row 32).
		aw.callID, opts.Oversize = msg.id, aw
	}
	if sid == "" {
		// Without a session, the IDs of its events are bound here
		// (events.go).
		opts.EventIDs, aw.path = aw, r.URL.Path
	}
	aw.aw.Reset(w, aw, opts)
	m.serveSession(&aw.aw, r, next, p, sid)
	if err := aw.aw.Finish(); err != nil {
		m.log.LogAttrs(r.Context(), slog.LevelWarn, "middleware: answer refused or filtered",
			slog.String("error", err.Error()), slog.String("path", r.URL.Path))
	}
	m.answerWriters.put(aw)
}

// answerWriter reads one answer (an rpcanswer.Rewriter).
type answerWriter struct {
	aw      rpcanswer.Writer
	m       *Middleware
	ctx     context.Context
	p       *Principal
	hdr     http.Header
	owner   string    // taskOwner, computed when first needed
	known   bool      // owner is computed
	create  bool      // the request may create a task: record the one its response creates
	list    bool      // tasks/list: its answer must be read
	entries *listKind // an entry list: its response is filtered (lists.go)
	scopes  string    // the creating request's scope key
	reqID   []byte
	callID  []byte // the request's id, for OversizeMessage; nil for none
	// answered: a message that may be a response went out (mayBeResponse),
	// after which OversizeMessage adds nothing.
	answered bool
	path     string // the request's path, when its event IDs are recorded
	env      rpcanswer.Message
}

// EventID implements rpcanswer.EventIDRecorder: the answer to a request
// without a session sends an event with this ID (events.go).
func (t *answerWriter) EventID(id []byte) {
	t.m.events.record(t.path, id, t.ownerKey())
}

// bodyTooLargeTail ends the error that replaces a response over the size
// bound of an SSE answer.
const bodyTooLargeTail = `,"error":{"code":-32603,"message":"Response too large"}}`

// OversizeMessage implements rpcanswer.OversizeAnswerer: an SSE answer to
// a request whose last message was removed for its size (its response,
// most likely: a server ends the stream after the response) ends with a
// JSON-RPC error for the request's id, so that its client does not wait
// for a response that will never come.
func (t *answerWriter) OversizeMessage() []byte {
	if t.callID == nil || t.answered {
		return nil
	}
	t.m.log.LogAttrs(t.ctx, slog.LevelWarn, "middleware: a message of an SSE answer was over the size bound; the answer ends with Response too large",
		slog.Int("bound", rpcanswer.DefaultMaxMessageBytes))
	return []byte(bodyMismatchHead + echoID(t.callID) + bodyTooLargeTail)
}

// mayBeResponse reports whether msg may be a JSON-RPC response: it has a
// "result" or "error" member as JSON encoders write them. A response
// written otherwise ("result" :) is missed, and its client may get the
// error of OversizeMessage after it (which it ignores: its request is
// answered); a notification with such a member is taken for a response,
// and an oversize response after it ends the stream without one (as
// without OversizeMessage).
func mayBeResponse(msg []byte) bool {
	return bytes.Contains(msg, []byte(`"result":`)) || bytes.Contains(msg, []byte(`"error":`))
}

// answerWriterPool is a short free list of answerWriters.
type answerWriterPool struct {
	mu   sync.Mutex
	free []*answerWriter
}

func (tp *answerWriterPool) get() *answerWriter {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if n := len(tp.free); n > 0 {
		tw := tp.free[n-1]
		tp.free = tp.free[:n-1]
		return tw
	}
	return new(answerWriter)
}

func (tp *answerWriterPool) put(tw *answerWriter) {
	// Keep the answer writer's buffers, drop the request's state.
	tw.m, tw.ctx, tw.p, tw.hdr, tw.reqID, tw.callID, tw.entries = nil, nil, nil, nil, nil, nil, nil
	tw.owner, tw.scopes, tw.path, tw.known, tw.create, tw.list, tw.answered = "", "", "", false, false, false, false
	tw.env = rpcanswer.Message{}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.free) < maxFreeAnswerWriters {
		tp.free = append(tp.free, tw)
	}
}

func (t *answerWriter) ownerKey() string {
	if !t.known {
		t.owner, t.known = t.m.taskOwner(t.p, t.hdr), true
	}
	return t.owner
}

// mayConcernTasks reports whether msg could be a task message at all, to
// any reader: a JSON text that names a task notification, a tasks array
// or a task must contain "task" in some ASCII case (lenient readers such
// as encoding/json match member names case-insensitively), an escape, or
// a non-ASCII byte (under Unicode folding U+017F is "s" and U+212A "k").
func mayConcernTasks(msg []byte) bool {
	return bytes.IndexByte(msg, '\\') >= 0 || !isASCII(msg) ||
		foldTaskEndsAt(msg, 'k') || foldTaskEndsAt(msg, 'K')
}

// foldTaskEndsAt reports whether some k in msg ends "task" in any ASCII
// case. It finds each k with bytes.IndexByte, so that a long answer
// without one costs a vectorized scan.
func foldTaskEndsAt(msg []byte, k byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(msg[i:], k)
		if j < 0 {
			return false
		}
		i += j + 1
		if e := i - 1; e >= 3 && msg[e-3]|0x20 == 't' && msg[e-2]|0x20 == 'a' && msg[e-1]|0x20 == 's' {
			return true
		}
	}
}

// isASCII reports whether every byte of b is below 0x80, eight at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// Rewrite implements rpcanswer.Rewriter.
func (t *answerWriter) Rewrite(msg []byte) ([]byte, error) {
	if t.callID != nil && !t.answered && mayBeResponse(msg) {
		t.answered = true
	}
	if !t.create && !t.list && t.entries == nil && !mayConcernTasks(msg) {
		return msg, nil
	}
	env := &t.env
	if err := rpcanswer.Parse(&t.m.json, msg, env); err != nil {
		return nil, err // unreadable: it could be anything
	}
	if env.HasMethod {
		if string(env.Method) != notifTaskStatus && string(env.Method) != notifTasks {
			return msg, nil
		}
		if ok, err := t.ownsParam(env.Params); err != nil || !ok {
			return nil, err
		}
		return msg, nil
	}
	if len(env.Result) == 0 || env.Result[0] != '{' {
		return msg, nil // an error response, or not a result we read
	}
	result, start, end := env.Result, env.ResultStart, env.ResultEnd
	mine := sameID(env.ID, t.reqID)
	if t.create && mine {
		t.create = false
		if err := t.record(result); err != nil {
			t.m.log.LogAttrs(t.ctx, slog.LevelWarn, "middleware: task not recorded", slog.String("error", err.Error()))
			return internalError(env.ID), nil
		}
	}
	changed := false
	if t.entries != nil {
		if !mine {
			t.m.log.LogAttrs(t.ctx, slog.LevelWarn, "middleware: answer refused", slog.String("error", errForeignResponse.Error()))
			return internalError(env.ID), nil
		}
		filtered, err := t.filterEntries(result)
		if err != nil {
			return nil, err
		}
		result, changed = filtered, true
	}
	if t.list || mayConcernTasks(result) {
		filtered, err := t.filterTasks(result)
		if err != nil {
			return nil, err
		}
		if filtered != nil {
			result, changed = filtered, true
		}
	}
	if !changed {
		return msg, nil
	}
	return rpcanswer.Splice(msg, start, end, result), nil
}

// internalError is the JSON-RPC "Internal error" replacing a response
// with the raw id.
func internalError(id []byte) []byte {
	return []byte(bodyMismatchHead + echoID(id) + bodyInternalTail)
}

// sameID reports whether the raw JSON-RPC ids a and b are the same id:
// equal text, equal strings (whatever their escapes), or numbers equal as
// float64 values (1, 1.0, 1e0; 0 and -0; integers past 2^53 as an SDK
// holding them in a float64 re-encodes them). It is the one match of a
// response to its request for the whole answer layer.
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return len(a) > 0
	}
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if a[0] == '"' && b[0] == '"' {
		x, ok1 := rpcanswer.String(a)
		y, ok2 := rpcanswer.String(b)
		return ok1 && ok2 && x == y
	}
	if a[0] == '"' || b[0] == '"' {
		return false
	}
	x, err1 := strconv.ParseFloat(string(a), 64)
	y, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && x == y
}
