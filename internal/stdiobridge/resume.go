package stdiobridge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"time"
)

// Resumption (MCP 2025-11-25 Streamable HTTP, "Resumability and
// Redelivery"; docs/proxy.md, "Resuming a stream"). Every SSE stream of
// a stateful session, the answer to each POSTed request and the GET
// stream of each client session, has a stream ID of 128 random bits, and
// its events the IDs "<stream>-<seq>", seq counting from 0. A POST's
// stream opens with a priming event (its ID, empty data) for clients of
// 2025-11-25 or later (SEP-1699). The events of a stream are kept in its
// log; its connection is one reader of the log. When the connection
// goes, the request goes on (a disconnection is not a cancellation:
// notifications/cancelled is), and what the child sends for it is kept,
// so that a GET with Last-Event-ID of the stream replays the events
// after that ID and goes on live until the response, then ends. A
// finished stream stays resumable for Config.ResumeWindow after its
// connection went, whether or not its response was written on it (the
// bridge knows what it wrote, not what the client read: a connection
// may fail after the last write, and the client then resumes). A session
// keeps at most MaxQueued events and resumeBytes(MaxMessageBytes) bytes
// in all its streams: beyond, finished streams whose response was
// written go first, whole, the oldest first; then a stream loses its
// oldest events (the stream that adds them, unless its client has not
// had that one and has had the session's oldest; then the session's
// oldest),
// and a Last-Event-ID before a lost event, or of a stream that lost an
// event it had not yet sent, is not resumable.
// Stateless (2026-07-28) requests have no resumption: there, the client
// closing its stream cancels the request.

// streamIDLen is the length of a stream ID: 16 random bytes in hex.
const streamIDLen = 32

// maxEventIDLen bounds a Last-Event-ID: a stream ID, '-' and a seq of
// at most 19 digits (an int64).
const maxEventIDLen = streamIDLen + 1 + 19

// errBadEventID: a Last-Event-ID that is malformed, names no stream of
// the client session, or an event after which the stream's events are
// no longer all kept (lost at the bounds, or the stream forgotten).
var errBadEventID = errors.New("stdiobridge: Last-Event-ID not resumable")

// parseEventID reads a Last-Event-ID value strictly: 32 lowercase hex
// digits, '-', and a decimal seq without sign or leading zero that fits
// an int64.
func parseEventID(v string) (stream string, seq int64, err error) {
	if len(v) < streamIDLen+2 || len(v) > maxEventIDLen || v[streamIDLen] != '-' {
		return "", 0, errBadEventID
	}
	for i := range streamIDLen {
		c := v[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", 0, errBadEventID
		}
	}
	digits := v[streamIDLen+1:]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, errBadEventID
	}
	for i := range len(digits) {
		c := digits[i]
		if c < '0' || c > '9' {
			return "", 0, errBadEventID
		}
		d := int64(c - '0')
		if seq > (1<<63-1-d)/10 {
			return "", 0, errBadEventID
		}
		seq = seq*10 + d
	}
	return v[:streamIDLen], seq, nil
}

// sseEvent is one event of a stream's log.
type sseEvent struct {
	seq  int64
	ord  uint64 // the session's order of events, for eviction
	data []byte
}

// sseLog is one SSE stream of a stateful session: a POST's answer (c
// set) or a client session's GET stream. Its fields are guarded by the
// session's mu.
type sseLog struct {
	id     string
	scope  string
	c      *call // the request it answers; nil: a GET stream
	next   int64 // the seq of the next event
	first  int64 // the seq of events[0]: every earlier event is gone
	events []sseEvent
	bytes  int
	sent   int64 // a GET stream's first event not yet written to a connection
	// taken is the first event the attached reader has not copied to
	// write: one before it that the bound drops, the reader still writes.
	taken int64
	// cut ends the attached reader's connection (its blocked write too);
	// gapGen is the reader that missed an event (its pump ends).
	cut    func()
	gapGen uint64
	done   bool // its last event (the response) is in events
	// delivered: its response was written on a connection (kept for
	// resume_window all the same, but first to go at the bounds, and it
	// keeps no session from ending: evict.go).
	delivered bool
	lost      bool // it lost an event not yet sent: resumable from no ID a client has
	freed     bool
	gen       uint64        // bumped at each attach: the reader holding it is the one
	reader    bool          // a connection is attached
	wake      chan struct{} // cap 1, the reader's: an event was added, or the stream freed
	timer     *time.Timer   // forgets a finished stream with no reader
}

func newStreamID() string {
	var b [streamIDLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newLog registers a stream of scope with a reader attached (the
// connection that opens it). Called with s.mu held.
func (s *session) newLog(scope string, c *call) *sseLog {
	// seq 0 is a POST stream's priming event (a GET stream has none).
	st := &sseLog{id: newStreamID(), scope: scope, c: c, next: 1, first: 1, sent: 1, taken: 1, gen: 1, reader: true, wake: make(chan struct{}, 1)}
	s.streams[st.id] = st
	return st
}

// resumeBytes is the bound of the bytes a session keeps in its streams'
// logs: a few of the largest messages.
func resumeBytes(maxMessage int) int { return 4 * maxMessage }

// appendEvent adds data to st's log, within the session's bounds, and
// wakes its reader. Called with s.mu held.
func (s *session) appendEvent(st *sseLog, data []byte) {
	if st.freed || st.lost && st.c != nil && !st.reader {
		return // a request's stream no client can resume: nothing to keep
	}
	s.ord++
	st.events = append(st.events, sseEvent{seq: st.next, ord: s.ord, data: data})
	st.next++
	st.bytes += len(data)
	s.evN++
	s.evBytes += len(data)
	maxB := resumeBytes(s.b.cfg.MaxMessageBytes)
	for s.evN > s.b.cfg.MaxQueued || s.evBytes > maxB {
		if d := s.oldestDelivered(st); d != nil {
			s.freeLog(d)
			continue
		}
		v := st
		if len(st.events) <= 1 || !headHarmless(st) {
			// The stream adding one loses its own first, unless that
			// would lose an event its client has not had (a GET stream's
			// reader keeping up would be cut) while the session's oldest
			// event is one its client has had.
			o := s.oldestOther(st)
			if o == nil && len(st.events) <= 1 {
				break
			}
			if o != nil && (len(st.events) <= 1 || headHarmless(o)) {
				v = o
			}
		}
		s.evictHead(v)
	}
	wakeup(st.wake)
}

func wakeup(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// headHarmless reports whether dropping v's oldest event loses nothing
// its client has not had (evictHead: no gap for its reader, no loss).
// Called with s.mu held.
func headHarmless(v *sseLog) bool {
	seq := v.events[0].seq
	if v.c == nil && v.reader && seq >= v.taken {
		return false
	}
	return seq < v.sent || v.reader && seq < v.taken
}

// oldestDelivered is the finished stream other than st, with no reader,
// whose response was written on a connection longest ago, or nil.
// Called with s.mu held (at the bounds only).
func (s *session) oldestDelivered(st *sseLog) *sseLog {
	var (
		v   *sseLog
		ord uint64
	)
	for _, o := range s.streams {
		if o == st || !o.delivered || o.reader || o.freed {
			continue
		}
		var last uint64 // an emptied stream goes first
		if n := len(o.events); n > 0 {
			last = o.events[n-1].ord
		}
		if v == nil || last < ord {
			v, ord = o, last
		}
	}
	return v
}

// oldestOther is the stream other than st holding the session's oldest
// event, or nil. Called with s.mu held (at the bounds only).
func (s *session) oldestOther(st *sseLog) *sseLog {
	var v *sseLog
	for _, o := range s.streams {
		if o != st && len(o.events) > 0 && (v == nil || o.events[0].ord < v.events[0].ord) {
			v = o
		}
	}
	return v
}

// evictHead drops v's oldest event. A stream that loses an event not yet
// sent on a connection can no longer be resumed from any ID its client
// has (every such ID comes before the loss: fail closed, a client never
// resumes past a gap unknowingly). A GET stream's reader that had not
// taken the event does not skip the gap: its connection ends where the
// gap begins (what it wrote has none), and its client, resuming, is
// refused (400), so that a client that does not keep up learns that it
// missed messages (list changes, resource updates: state it would
// otherwise hold stale) instead of going on without them. A request's
// stream skips the gap for its reader: what it loses is what the child
// sent while serving the request (progress, logging), and its answer,
// which comes last, is what its client needs (ending the connection
// would lose it too). A request's stream with no reader is then
// emptied, and forgotten if answered: no one can have what it would
// keep. Called with s.mu held.
func (s *session) evictHead(v *sseLog) {
	e := v.events[0]
	v.events[0] = sseEvent{}
	v.events = v.events[1:]
	v.first = e.seq + 1
	v.bytes -= len(e.data)
	s.evN--
	s.evBytes -= len(e.data)
	if v.c == nil && v.reader && e.seq >= v.taken && v.gapGen != v.gen {
		s.log.Warn("stdio: a client did not keep up: its stream ends at the messages lost", "stream", v.id[:8])
		v.gapGen = v.gen
		if v.cut != nil {
			v.cut()
		}
		wakeup(v.wake)
	}
	if e.seq >= v.sent && (!v.reader || e.seq >= v.taken) {
		if !v.lost {
			s.log.Warn("stdio: child messages dropped: over the session's stream buffer bound", "stream", v.id[:8])
		}
		v.lost = true
		if v.c != nil && !v.reader {
			if v.done {
				s.freeLog(v) // answered: nothing more will come
			} else {
				s.dropEvents(v)
			}
		}
	}
}

// dropEvents empties st's log. Called with s.mu held.
func (s *session) dropEvents(st *sseLog) {
	for _, e := range st.events {
		s.evN--
		s.evBytes -= len(e.data)
	}
	st.events, st.bytes = nil, 0
	st.first = st.next
}

// freeLog forgets st. Called with s.mu held.
func (s *session) freeLog(st *sseLog) {
	if st.freed {
		return
	}
	st.freed = true
	s.dropEvents(st)
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	if st.c == nil && s.getLogs[st.scope] == st {
		delete(s.getLogs, st.scope)
	}
	if st.c == nil && s.gets[st.scope] == st {
		delete(s.gets, st.scope)
	}
	wakeup(st.wake)
}

// expireLater forgets finished POST stream st after the resume window
// unless a reader attaches first. Called with s.mu held.
func (s *session) expireLater(st *sseLog) {
	if st.c == nil || st.freed || st.reader || !st.done || st.timer != nil {
		return
	}
	st.timer = time.AfterFunc(s.b.cfg.ResumeWindow, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !st.reader {
			s.freeLog(st)
		}
	})
}

// attach makes a new connection, which writes from event cursor on, st's
// reader, replacing any other (whose pump then ends). Called with s.mu
// held.
func (s *session) attach(st *sseLog, cursor int64) uint64 {
	st.gen++
	st.reader = true
	st.taken = cursor
	st.cut = nil
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	if st.c == nil {
		s.gets[st.scope] = st
	}
	// The reader replaced, if any, wakes on its own channel and ends; the
	// new one gets a channel of its own, so that neither takes the
	// other's wake.
	wakeup(st.wake)
	st.wake = make(chan struct{}, 1)
	return st.gen
}

// detach notes that reader gen of st has gone; a finished POST stream
// then stays resumable for the resume window. Called with s.mu held.
func (s *session) detach(st *sseLog, gen uint64) {
	if st.gen != gen {
		return
	}
	st.reader = false
	if st.c == nil && s.gets[st.scope] == st {
		delete(s.gets, st.scope)
	}
	if st.lost && st.c != nil {
		// No client can resume it: what it keeps goes, and the whole
		// stream once answered.
		if st.done {
			s.freeLog(st)
		} else {
			s.dropEvents(st)
		}
		return
	}
	s.expireLater(st)
}

// pump writes st's events from seq cursor on to w, live, until the
// response is written (finished: true), the stream is freed,
// another reader takes it, the session ends, the client goes or a
// write fails.
func (s *session) pump(w http.ResponseWriter, fl http.Flusher, r *http.Request, st *sseLog, gen uint64, cursor int64) (finished bool) {
	var batch []sseEvent
	buf := make([]byte, 0, 512)
	for {
		s.mu.Lock()
		if st.gen != gen || st.freed || st.gapGen == gen {
			s.mu.Unlock()
			return false
		}
		wake := st.wake
		cursor = max(cursor, st.first) // past events lost before it was attached
		batch = append(batch[:0], st.events[cursor-st.first:]...)
		st.taken = st.next
		done := st.done
		s.mu.Unlock()
		for _, e := range batch {
			buf = appendEvent(buf[:0], st.id, e.seq, e.data)
			if _, err := w.Write(buf); err != nil {
				return false
			}
			cursor = e.seq + 1
		}
		if len(batch) > 0 {
			if fl != nil {
				fl.Flush()
			}
			s.mu.Lock()
			if st.gen == gen {
				st.sent = max(st.sent, cursor)
			}
			s.mu.Unlock()
		}
		clear(batch)
		if done {
			s.mu.Lock()
			finished = st.gen == gen && cursor == st.next
			s.mu.Unlock()
			if finished {
				return true
			}
		}
		select {
		case <-wake:
		case <-s.endedCh:
			return false
		case <-r.Context().Done():
			return false
		}
	}
}

// appendEvent appends one SSE event with ID stream-seq and data msg (a
// JSON-RPC message on one line, or nothing for a priming event) to buf.
func appendEvent(buf []byte, stream string, seq int64, msg []byte) []byte {
	if msg != nil {
		buf = append(buf, "event: message\n"...)
	}
	buf = append(buf, "id: "...)
	buf = append(buf, stream...)
	buf = append(buf, '-')
	buf = appendInt(buf, seq)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, msg...)
	return append(buf, "\n\n"...)
}

// primes reports whether r's client takes a priming event (empty data):
// clients of 2025-11-25 and later do; earlier ones may fail to parse it
// (as the TypeScript SDK's server decides, by MCP-Protocol-Version).
func primes(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v >= "2025-11-25"
}

// resume serves a GET with Last-Event-ID v in client session scope.
func (s *session) resume(w http.ResponseWriter, r *http.Request, scope, v string) {
	id, seq, err := parseEventID(v)
	s.mu.Lock()
	var st *sseLog
	if err == nil {
		st = s.streams[id]
	}
	if st == nil || st.scope != scope || st.freed || seq >= st.next || seq+1 < st.first {
		s.mu.Unlock()
		writeJSONError(w, http.StatusBadRequest, nil, -32600, "Bad Request: Last-Event-ID is not resumable")
		return
	}
	gen := s.attach(st, seq+1)
	s.mu.Unlock()
	s.serveLog(w, r, st, gen, seq+1, false)
}

// serveLog answers an SSE stream of st's events from cursor on, as its
// reader gen, opened by a priming event when prime is set. A POST stream
// whose response it wrote stays resumable for the resume window: the
// connection may fail before the client reads what was written.
func (s *session) serveLog(w http.ResponseWriter, r *http.Request, st *sseLog, gen uint64, cursor int64, prime bool) {
	s.active.Add(1)
	defer s.active.Done()
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	s.mu.Lock()
	if st.gen == gen {
		// A deadline passed makes a blocked write fail, and the
		// connection end (pipeResponse: the pipe).
		st.cut = func() { _ = rc.SetWriteDeadline(time.Now()) }
	}
	s.mu.Unlock()
	var err error
	if prime {
		_, err = w.Write(appendEvent(make([]byte, 0, 64), st.id, 0, nil))
	}
	if fl != nil {
		fl.Flush()
	}
	finished := err == nil && s.pump(w, fl, r, st, gen, cursor)
	s.mu.Lock()
	if finished && st.gen == gen {
		st.delivered = true
	}
	s.detach(st, gen)
	s.mu.Unlock()
}

// dropScope forgets the streams of client session scope, deleted (its
// requests in flight go on; what the child sends for them is dropped).
func (s *session) dropScope(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		if st.scope == scope {
			s.freeLog(st)
		}
	}
	delete(s.gets, scope)
	s.scopes = slices.DeleteFunc(s.scopes, func(v string) bool { return v == scope })
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool {
		if q.scope == scope && !q.any {
			s.queueBytes -= len(q.msg)
			return true
		}
		return false
	})
}
