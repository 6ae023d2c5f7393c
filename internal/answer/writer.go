package answer

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// DefaultMaxMessageBytes bounds a JSON answer, and each event of an SSE
// answer, when Options.MaxMessageBytes is zero.
const DefaultMaxMessageBytes = 4 << 20

// maxKeptBuffer is the largest buffer a [Writer] keeps across Reset, so
// that one large answer does not pin memory in a pool of writers.
const maxKeptBuffer = 64 << 10

// Failures, returned by [Writer.Finish] (the first one of the answer).
var (
	// ErrTooLarge: a JSON answer or an SSE event exceeded
	// Options.MaxMessageBytes.
	ErrTooLarge = errors.New("answer: message over the size bound")
	// ErrDropped: the Rewriter dropped the only message of a JSON answer.
	ErrDropped = errors.New("answer: JSON answer dropped")
	// ErrUnreadable: an answer the Writer cannot read: a JSON or SSE body
	// with a Content-Encoding, repeated Content-Type headers, a media type
	// that merely contains "json" or "event-stream" (clients that match
	// substrings would parse it), or, with Options.RefuseOther, any other
	// media type.
	ErrUnreadable = errors.New("answer: unreadable answer refused")
	// ErrFinished: a write after [Writer.Finish].
	ErrFinished = errors.New("answer: write after Finish")
)

// Rewriter rewrites the JSON-RPC messages of an answer. Rewrite is called
// with the JSON text of one message: the whole body of a JSON answer, or
// the data of one SSE event. It returns msg itself, or equal bytes, to
// keep the message as it was sent (byte for byte); other bytes to replace
// it; or nil to drop it. An error drops the message too and is reported by
// [Writer.Finish]. msg is valid only during the call and must not be
// modified; the result may alias it. Rewrite is never called concurrently
// for one Writer.
type Rewriter interface {
	Rewrite(msg []byte) ([]byte, error)
}

// Options tune a [Writer]. The zero value is ready to use.
type Options struct {
	// MaxMessageBytes bounds the body of a JSON answer and each event of
	// an SSE answer. Zero means [DefaultMaxMessageBytes].
	MaxMessageBytes int
	// RefuseOther replaces an answer of any other media type that has a
	// body with 502, for callers that must see every message (a tasks/list
	// answer that could not be filtered must not pass). Defaults to false:
	// such answers pass untouched (a 405 or 404 text answer of the SDK).
	RefuseOther bool
	// SSEOnly reads SSE answers only: a JSON answer (one message, the
	// response) passes untouched, as do unreadable ones that are not
	// event streams. For callers that only filter what a stream can carry
	// besides the response (notifications), at no cost for JSON answers.
	SSEOnly bool
	// EventIDs, if set, is told the ID of every event of an SSE answer that
	// the Writer writes on (kept, replaced, or dropped with its id and
	// retry fields kept), so that its caller can bind Last-Event-ID to the
	// answer's recipient. Nil: event IDs are not reported.
	EventIDs EventIDRecorder
	// Oversize, if set, is asked at Finish for a message to end an SSE
	// answer whose last message was removed for exceeding MaxMessageBytes
	// (its whole event, or the stream ended within it), so that a client
	// whose response was too large gets an error instead of a stream that
	// ends without a response. Nil: nothing is added.
	Oversize OversizeAnswerer
}

// OversizeAnswerer gives the message that ends an SSE answer whose last
// message was too large ([Options]).
type OversizeAnswerer interface {
	// OversizeMessage returns the JSON text of one message (no CR or LF),
	// written as the answer's last event, or nil to add nothing.
	OversizeMessage() []byte
}

// EventIDRecorder is told the event IDs of an SSE answer ([Options]).
// EventID is called, for each event written on, with the value of its
// last "id" field when that is not empty: the ID a client resuming after
// that event sends as Last-Event-ID (an "id" field holding U+0000, which
// clients ignore, is ignored). id is valid only during the call. It is
// called before the event is written, never concurrently for one Writer.
type EventIDRecorder interface {
	EventID(id []byte)
}

type mode uint8

const (
	modeUndecided mode = iota // nothing written yet
	modePass                  // another media type: untouched
	modeJSON                  // buffering one JSON message
	modeSSE                   // splitting events as they come
	modeHeld                  // unreadable: header held until a body byte
	modeFailed                // the answer is replaced by 502
)

// Writer is an http.ResponseWriter that passes an answer through a
// [Rewriter] (see the package documentation). Its zero value must be
// [Writer.Reset] before use; it may be reused after [Writer.Finish] (pool
// it: a Writer keeps its buffers). It is safe for concurrent use, as some
// SDKs write from several goroutines under their own lock.
type Writer struct {
	mu       sync.Mutex
	w        http.ResponseWriter
	rw       Rewriter
	max      int
	refuse   bool
	sseOnly  bool
	ids      EventIDRecorder
	oversize OversizeAnswerer
	mode     mode
	status   int
	finished bool
	err      error // the first failure
	body     []byte
	scratch  []byte // joined data lines
	obuf     []byte // a rebuilt event
	sse      sseState
}

var _ http.Flusher = (*Writer)(nil)

// Reset prepares w to pass the answer written to it through rw and then to
// dst. It keeps w's buffers.
func (w *Writer) Reset(dst http.ResponseWriter, rw Rewriter, opts Options) {
	w.w, w.rw = dst, rw
	w.max = opts.MaxMessageBytes
	if w.max <= 0 {
		w.max = DefaultMaxMessageBytes
	}
	w.refuse, w.sseOnly, w.ids, w.oversize = opts.RefuseOther, opts.SSEOnly, opts.EventIDs, opts.Oversize
	w.mode, w.status, w.finished, w.err = modeUndecided, 0, false, nil
	w.body, w.scratch, w.obuf = keep(w.body), keep(w.scratch), keep(w.obuf)
	w.sse = sseState{}
}

func keep(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	return b[:0]
}

// Header returns the header map of the underlying writer.
func (w *Writer) Header() http.Header { return w.w.Header() }

// Unwrap returns the underlying writer, for http.ResponseController
// (deadlines; Flush goes through [Writer.Flush]).
func (w *Writer) Unwrap() http.ResponseWriter { return w.w }

// WriteHeader records the status and decides how the answer is read from
// its Content-Type and Content-Encoding. Informational (1xx) statuses pass
// at once.
func (w *Writer) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished || w.mode != modeUndecided {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.w.WriteHeader(code)
		return
	}
	w.decide(code)
}

// decide picks the mode of an answer with status code and the handler's
// headers.
func (w *Writer) decide(code int) {
	w.status = code
	h := w.w.Header()
	k := classify(h)
	if w.sseOnly && (k == kindJSON || k == kindUnreadable && !mayBeSSE(h)) {
		k = kindOther
	}
	switch k {
	case kindJSON:
		w.mode = modeJSON // the header is written by Finish
	case kindSSE:
		w.mode = modeSSE
		h.Del("Content-Length") // events may be rewritten
		w.w.WriteHeader(code)
	case kindUnreadable:
		w.mode = modeHeld
	default:
		if w.refuse && !w.sseOnly {
			w.mode = modeHeld
			return
		}
		w.mode = modePass
		w.w.WriteHeader(code)
	}
}

// Write buffers, splits or passes p according to the answer's mode. It
// reports an error only when the underlying writer does (or after
// Finish), so that the handler stops when the client has gone.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return 0, ErrFinished
	}
	if w.mode == modeUndecided {
		w.decide(http.StatusOK)
	}
	switch w.mode {
	case modePass:
		return w.w.Write(p)
	case modeJSON:
		if len(w.body)+len(p) > w.max {
			w.fail(ErrTooLarge)
			return len(p), nil
		}
		w.body = append(w.body, p...)
	case modeSSE:
		if err := w.feed(p); err != nil {
			return 0, err
		}
	case modeHeld:
		if len(p) > 0 {
			w.fail(ErrUnreadable)
		}
	}
	return len(p), nil // modeFailed: discarded
}

// Flush sends what has been decided so far: the events already complete
// of an SSE answer, or the bytes of a passed answer. A JSON answer is only
// written by Finish.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return
	}
	if w.mode == modeUndecided {
		w.decide(http.StatusOK)
	}
	if w.mode == modePass || w.mode == modeSSE {
		// Through http.ResponseController: a writer that only unwraps to
		// a flusher (Caddy's) flushes too.
		_ = http.NewResponseController(w.w).Flush()
	}
}

// Finish completes the answer once the handler has returned: it rewrites
// and writes a JSON answer, writes the 502 of a failed one, and drops the
// incomplete last event of an SSE answer. It returns the first failure of
// the answer (for the log; the client has seen only the documented
// answer). Later writes fail with [ErrFinished]. It releases the
// Rewriter.
func (w *Writer) Finish() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return w.err
	}
	w.finished = true
	switch w.mode {
	case modeJSON:
		w.finishJSON()
	case modeHeld: // no body came: the status and headers are the handler's
		w.w.WriteHeader(w.status)
	case modeFailed:
		w.write502()
	case modeSSE:
		w.endOversize()
	}
	w.rw, w.oversize = nil, nil
	return w.err
}

func (w *Writer) finishJSON() {
	if len(w.body) == 0 {
		w.w.WriteHeader(w.status)
		return
	}
	out, err := w.rw.Rewrite(w.body)
	switch {
	case err != nil:
		w.fail(err)
	case out == nil:
		w.fail(ErrDropped)
	}
	if w.mode == modeFailed {
		w.write502()
		return
	}
	h := w.w.Header()
	if _, ok := h["Content-Length"]; ok {
		h.Set("Content-Length", strconv.Itoa(len(out)))
	}
	w.w.WriteHeader(w.status)
	_, _ = w.w.Write(out)
}

// fail records err and, for an answer whose header is not yet written,
// switches to the 502 answer.
func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	if w.mode == modeJSON || w.mode == modeHeld {
		w.mode = modeFailed
		w.body = w.body[:0]
	}
}

// write502 replaces the answer: 502, text/plain "Bad Gateway".
func (w *Writer) write502() {
	h := w.w.Header()
	for _, k := range [...]string{"Content-Length", "Content-Encoding", "Etag", "Last-Modified", "Content-Range"} {
		h.Del(k)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w.w, "Bad Gateway\n")
}

type bodyKind uint8

const (
	kindOther bodyKind = iota
	kindJSON
	kindSSE
	kindUnreadable
)

// classify reads the media type of an answer. Only an exact
// application/json or text/event-stream (parameters aside, case-insensitive)
// without a Content-Encoding other than identity is readable; a media type
// that contains "json" or "event-stream" in any other way is unreadable,
// since clients that match substrings (the TypeScript SDK's includes())
// would parse it as JSON or SSE.
func classify(h http.Header) bodyKind {
	cts := h["Content-Type"]
	if len(cts) == 0 {
		return kindOther
	}
	if len(cts) > 1 {
		return kindUnreadable
	}
	ct := cts[0]
	mt, params := ct, ""
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		mt, params = ct[:i], ct[i:]
	}
	mt = strings.TrimSpace(mt)
	k := kindOther
	switch {
	case strings.EqualFold(mt, "application/json"):
		k = kindJSON
	case strings.EqualFold(mt, "text/event-stream"):
		k = kindSSE
	}
	if k == kindOther {
		if containsFold(ct, "json") || containsFold(ct, "event-stream") {
			return kindUnreadable
		}
		return kindOther
	}
	if containsFold(params, "json") || containsFold(params, "event-stream") {
		return kindUnreadable // application/json; x=text/event-stream
	}
	if enc := h["Content-Encoding"]; len(enc) > 0 && (len(enc) > 1 || !strings.EqualFold(strings.TrimSpace(enc[0]), "identity")) {
		return kindUnreadable
	}
	return k
}

// mayBeSSE reports whether a client could read an answer with header h
// as an event stream.
func mayBeSSE(h http.Header) bool {
	cts := h["Content-Type"]
	if len(cts) > 1 {
		return true
	}
	return len(cts) == 1 && containsFold(cts[0], "event-stream")
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case, without allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
