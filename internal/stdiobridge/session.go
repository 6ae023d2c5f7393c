package stdiobridge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// call is one client request in flight to the child.
type call struct {
	clientID []byte // the client's raw id
	scope    string // the client session of a shared child, or ""
	method   string
	childKey string        // the id the child sees
	progress string        // the raw progress token, or ""
	out      chan []byte   // what the child sends for it, when log is nil
	log      *sseLog       // its resumable SSE stream (resume.go), or nil
	timer    *time.Timer   // the request timeout
	fin      chan struct{} // closed with resp set (nil: the child ended)
	resp     []byte
	dropped  int
	// cancelled: the client sent notifications/cancelled for it.
	cancelled bool
}

// session is one MCP session: one child, one user.
type session struct {
	b       *Bridge
	id      string
	user    User
	ch      *child
	log     *slog.Logger
	release func()
	// stateless: the child serves a user's stateless requests (set
	// before the session is shared, never changed).
	stateless bool
	// sharedKey is the key of the child in Bridge.shared, or "".
	sharedKey string

	mu         sync.Mutex
	next       int64
	pending    map[string]*call   // by child id
	byClient   map[string]*call   // by scope, NUL and the client's raw id
	progress   map[string]*call   // by raw progress token
	serverReqs map[string]bool    // the child's requests waiting for the client
	reqIDBytes int                // the bytes of their ids, within resumeBytes
	inflight   []*call            // in order
	writing    int                // client notifications and answers being written (forward)
	streams    map[string]*sseLog // SSE streams, by stream id (resume.go)
	getLogs    map[string]*sseLog // GET streams, by scope
	gets       map[string]*sseLog // GET streams with a reader, by scope
	ord        uint64             // events added to streams
	evN        int                // events kept in streams
	evBytes    int                // their bytes
	queue      []queued           // for GET streams not yet open (route.go)
	queueBytes int                // their bytes, within resumeBytes
	scopes     []string           // the client sessions of a shared child, oldest first
	initResult []byte             // the child's initialize result, for a shared child
	last       time.Time
	started    bool // a request has left the flight (its initialize): before, it is starting, never idle (evict.go)
	ended      bool
	endedCh    chan struct{}
	endOnce    sync.Once
	readerDone chan struct{}  // closed when stdout is read to its end
	active     sync.WaitGroup // request handlers
}

func newSession(b *Bridge, id string, u User, ch *child, log *slog.Logger, release func(), stateless bool, sharedKey string) *session {
	s := &session{b: b, id: id, user: u, ch: ch, log: log.With("session", id[:8]), release: release, stateless: stateless, sharedKey: sharedKey,
		streams: map[string]*sseLog{}, getLogs: map[string]*sseLog{}, gets: map[string]*sseLog{}, pending: map[string]*call{}, byClient: map[string]*call{}, progress: map[string]*call{}, serverReqs: map[string]bool{},
		last: time.Now(), endedCh: make(chan struct{}), readerDone: make(chan struct{})}
	b.wg.Add(3)
	go s.readStdout()
	go s.readStderr()
	go s.watch()
	return s
}

// watch ends the session when the process exits, after what it wrote
// is read (its process group is killed then, so stdout ends; a process
// that left the group and holds stdout is given the stop grace).
func (s *session) watch() {
	defer s.b.wg.Done()
	select {
	case <-s.ch.exited:
	case <-s.endedCh:
		return
	}
	t := time.NewTimer(s.b.cfg.StopGrace)
	defer t.Stop()
	select {
	case <-s.readerDone:
	case <-t.C:
	}
	go s.end("process exited")
}

// idleSince is how long the session has had no request in flight and
// kept no answer for a client that went (an idle_timeout shorter than the
// resume window must not lose it).
func (s *session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleSinceLocked(now)
}

func (s *session) idleSinceLocked(now time.Time) time.Duration {
	if len(s.inflight) > 0 || s.keepsAnswerLocked() {
		return 0
	}
	return now.Sub(s.last)
}

// claimIdleFor marks s ended if it has been idle for d at now, as
// claimIdle (evict.go) does, and reports whether it did: a request
// arriving as the idle timeout ends the session gets 404, not a child
// stopped under it.
func (s *session) claimIdleFor(now time.Time, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.idleSinceLocked(now) < d {
		return false
	}
	s.ended = true
	return true
}

// end stops the child, answers every request in flight with an error
// and forgets the session (404 next time). It waits for the child to be
// reaped.
func (s *session) end(reason string) {
	s.endOnce.Do(func() {
		s.b.remove(s)
		s.mu.Lock()
		s.ended = true
		calls := s.inflight
		s.inflight = nil
		s.pending, s.byClient, s.progress = map[string]*call{}, map[string]*call{}, map[string]*call{}
		for _, c := range calls {
			c.timer.Stop()
			if st := c.log; st != nil {
				// Its stream's reader writes why before the stream ends.
				s.appendEvent(st, errorResponse(c.clientID, -32603, "Server process ended"))
				st.done = true
			}
		}
		s.mu.Unlock()
		for _, c := range calls {
			close(c.fin) // resp nil: the child ended
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.b.cfg.StopGrace+time.Second)
		s.ch.stop(ctx)
		cancel()
		// The GET stream ends a moment after the requests in flight have
		// written their errors, so that a client reads why before it sees
		// its stream end (clients such as go-sdk's fail every call when
		// the stream ends).
		done := make(chan struct{})
		go func() { s.active.Wait(); close(done) }()
		t := time.NewTimer(streamEndDelay)
		<-t.C
		select {
		case <-done:
		case <-time.After(streamEndDelay):
		}
		close(s.endedCh)
		s.mu.Lock()
		for _, st := range s.streams {
			s.freeLog(st)
		}
		s.queue, s.queueBytes = nil, 0
		s.mu.Unlock()
		s.log.Info("stdio: child ended", "reason", reason, "exit", s.ch.exitReason())
		s.release()
	})
	<-s.ch.exited
}

// isEnded reports whether the session has ended.
func (s *session) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// send registers a client request and writes it to the child with the
// bridge's id; resumable gives it an SSE stream with its connection
// attached (resume.go), else what the child sends for it goes to c.out.
func (s *session) send(m message, scope string, resumable bool) (*call, error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, errEnded
	}
	if len(s.inflight) >= s.b.cfg.MaxQueued {
		s.mu.Unlock()
		return nil, errBusy
	}
	s.next++
	id := itoa(s.next)
	c := &call{clientID: append([]byte(nil), m.id...), scope: scope, method: m.method, childKey: string(id), fin: make(chan struct{})}
	if resumable {
		c.log = s.newLog(scope, c)
	} else {
		c.out = make(chan []byte, 16)
	}
	// initialize is bounded by the start timeout (initialize, below), not
	// by the request timeout, which a start may well exceed (npx fetching
	// its package) where calls are short.
	timeout := s.b.cfg.RequestTimeout
	if m.method == "initialize" {
		timeout = max(timeout, s.b.cfg.StartTimeout)
	}
	c.timer = time.AfterFunc(timeout, func() {
		s.mu.Lock()
		live := s.pending[c.childKey] == c
		if live && c.cancelled && c.log != nil {
			// A child need not answer a cancelled request (MCP
			// cancellation): the request and its stream are forgotten,
			// the session goes on.
			s.forget(c)
			s.freeLog(c.log)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if live {
			s.end("no answer within the request timeout: hung")
		}
	})
	if tok := m.progressToken(&s.b.pool); tok != nil {
		c.progress = string(tok)
		s.progress[c.progress] = c
	}
	s.pending[c.childKey] = c
	s.byClient[scope+"\x00"+string(m.id)] = c
	s.inflight = append(s.inflight, c)
	s.mu.Unlock()
	if err := s.ch.write(m.withID(id), s.b.cfg.RequestTimeout); err != nil {
		go s.end("stdin not writable: " + err.Error())
		return nil, err
	}
	return c, nil
}

// streamEndDelay is how long a GET stream outlives its ended session.
const streamEndDelay = 500 * time.Millisecond

var errEnded = errors.New("stdiobridge: session ended")

// done forgets a finished call.
func (s *session) done(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(c)
}

func (s *session) forget(c *call) {
	c.timer.Stop()
	delete(s.pending, c.childKey)
	if k := c.scope + "\x00" + string(c.clientID); s.byClient[k] == c {
		delete(s.byClient, k)
	}
	if c.progress != "" && s.progress[c.progress] == c {
		delete(s.progress, c.progress)
	}
	for i, x := range s.inflight {
		if x == c {
			s.inflight = append(s.inflight[:i:i], s.inflight[i+1:]...)
			break
		}
	}
	s.last = time.Now()
	s.started = true
}

// post serves a client message in this session.
// post serves a client message in this session; scope names the client
// session of a shared child ("" for a session's own child).
func (s *session) post(w http.ResponseWriter, r *http.Request, m message, scope string) {
	switch m.kind {
	case kindNotification:
		line := m.raw
		if m.method == "notifications/roots/list_changed" && !s.b.cfg.ForwardRoots {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.method == "notifications/initialized" && scope != "" {
			// The bridge initialized the shared child itself.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.method == "notifications/cancelled" {
			line = s.cancelLine(m, scope)
			if line == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		}
		s.forward(w, line)
	case kindResponse:
		s.mu.Lock()
		ok := s.serverReqs[string(m.id)]
		if ok {
			delete(s.serverReqs, string(m.id))
			s.reqIDBytes -= len(m.id)
		}
		s.mu.Unlock()
		if !ok {
			// Not an answer to a request of this child: dropped.
			s.log.Warn("stdio: client answer to no request of the child dropped")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		s.forward(w, m.raw)
	case kindRequest:
		s.request(w, r, m, scope)
	}
}

// forward writes a client's notification or answer to the child. A
// child that reads nothing for a while (a sequential server serving a
// long call) holds it until it reads or request_timeout; at most
// MaxQueued of them wait in a session (503 beyond), each holding its
// body.
func (s *session) forward(w http.ResponseWriter, line []byte) {
	s.mu.Lock()
	if s.writing >= s.b.cfg.MaxQueued {
		s.mu.Unlock()
		w.Header().Set("Retry-After", retryAfter)
		writeJSONError(w, http.StatusServiceUnavailable, nil, -32603, "Server busy")
		return
	}
	s.writing++
	s.mu.Unlock()
	err := s.ch.write(line, s.b.cfg.RequestTimeout)
	s.mu.Lock()
	s.writing--
	s.mu.Unlock()
	if err != nil {
		go s.end("stdin not writable: " + err.Error())
		writeJSONError(w, http.StatusNotFound, nil, -32001, "Session not found")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// cancelLine maps notifications/cancelled's requestId from the client's
// id to the child's, or returns nil for a request not in flight.
func (s *session) cancelLine(m message, scope string) []byte {
	v, start, end := m.paramMember(&s.b.pool, cancelNames, "requestId")
	if v == nil {
		return nil
	}
	s.mu.Lock()
	c := s.byClient[scope+"\x00"+string(v)]
	if c != nil {
		c.cancelled = true
	}
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return splice(m.raw, start, end, []byte(c.childKey))
}

// request serves a client request: the answer is an SSE stream carrying
// what the child sends for it, then its response; in a stateful session
// that stream is resumable (resume.go), and the client going away does
// not cancel the request. A client that does not take SSE gets the
// response alone, as JSON.
func (s *session) request(w http.ResponseWriter, r *http.Request, m message, scope string) {
	s.active.Add(1)
	defer s.active.Done()
	sse := acceptsSSE(r)
	c, err := s.send(m, scope, sse && !s.stateless)
	switch {
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", retryAfter)
		writeJSONError(w, http.StatusServiceUnavailable, m.id, -32603, "Server busy")
		return
	case err != nil && s.stateless:
		// The user's stateless child ended as the request came: the next
		// request starts another.
		writeJSONError(w, http.StatusBadGateway, m.id, -32603, "Server unavailable")
		return
	case err != nil:
		writeJSONError(w, http.StatusNotFound, nil, -32001, "Session not found")
		return
	}
	if c.log != nil {
		s.serveLog(w, r, c.log, 1, 1, primes(r)) // reader 1 from event 1 (newLog)
		return
	}
	fl, _ := w.(http.Flusher)
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if fl != nil {
			fl.Flush()
		}
	}
	for {
		select {
		case msg := <-c.out:
			if sse && writeEvent(w, fl, msg) != nil {
				s.abandon(c)
				return
			}
		case <-c.fin:
			// Deliver what arrived before the answer, then the answer.
			for len(c.out) > 0 {
				msg := <-c.out
				if sse {
					_ = writeEvent(w, fl, msg)
				}
			}
			resp := c.resp
			if resp == nil {
				resp = errorResponse(c.clientID, -32603, "Server process ended")
			} else if s.stateless {
				resp = modernResult(&s.b.pool, c.method, resp)
			}
			if sse {
				_ = writeEvent(w, fl, s.fitEvent(c, resp))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(resp)
			return
		case <-r.Context().Done():
			s.abandon(c)
			return
		}
	}
}

// abandon tells the child that the client of c left, for a request
// without a resumable stream: a stateless one (closing its stream is how
// a 2026-07-28 client cancels), or one answered as JSON, whose answer
// cannot reach the client any more (MCP cancellation).
func (s *session) abandon(c *call) {
	s.mu.Lock()
	_, live := s.pending[c.childKey]
	s.forget(c)
	ended := s.ended
	s.mu.Unlock()
	if live && !ended {
		line := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + c.childKey + `,"reason":"client disconnected"}}`)
		_ = s.ch.write(line, s.b.cfg.RequestTimeout)
	}
}

func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

func writeEvent(w io.Writer, fl http.Flusher, msg []byte) error {
	buf := make([]byte, 0, len(msg)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, msg...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	if fl != nil {
		fl.Flush()
	}
	return nil
}

// serveGET is the session's stream of messages not tied to a request,
// one per client session (scope); with Last-Event-ID, the resumption of
// a stream of the client session (resume.go). A Last-Event-ID header
// with an empty value is no ID (as SSE clients send none).
func (s *session) serveGET(w http.ResponseWriter, r *http.Request, scope string) {
	if !acceptsSSE(r) {
		writeJSONError(w, http.StatusNotAcceptable, nil, -32600, "Not Acceptable: text/event-stream required")
		return
	}
	if v := r.Header.Values("Last-Event-Id"); len(v) > 1 || len(v) == 1 && v[0] != "" {
		if len(v) > 1 {
			v = []string{""} // several: not resumable
		}
		s.resume(w, r, scope, v[0])
		return
	}
	s.mu.Lock()
	if s.gets[scope] != nil {
		s.mu.Unlock()
		writeJSONError(w, http.StatusConflict, nil, -32600, "Conflict: a stream is already open")
		return
	}
	if s.ended {
		s.mu.Unlock()
		writeJSONError(w, http.StatusNotFound, nil, -32001, "Session not found")
		return
	}
	st := s.getLogs[scope]
	var gen uint64
	if st == nil {
		st = s.newLog(scope, nil)
		s.getLogs[scope] = st
		s.gets[scope] = st
		gen = st.gen
		s.takeQueued(st)
	} else {
		gen = s.attach(st, max(st.sent, st.first))
	}
	cursor := max(st.sent, st.first)
	s.mu.Unlock()
	s.serveLog(w, r, st, gen, cursor, false)
}
