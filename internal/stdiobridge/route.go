package stdiobridge

import (
	"bufio"
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/time/rate"
)

// readStdout reads the child's messages until it ends; anything but
// JSON-RPC ends the child.
func (s *session) readStdout() {
	defer s.b.wg.Done()
	lr := newLineReader(s.ch.stdout, s.b.cfg.MaxMessageBytes)
	reason := ""
read:
	for {
		line, err := lr.next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
				reason = "stdout closed"
			case errors.Is(err, errLineTooLong):
				reason = "a line on stdout over max_message_bytes"
			case errors.Is(err, errPartialLine):
				reason = "stdout ended inside a line"
			default:
				reason = "stdout: " + err.Error()
			}
			break read // a bare break would end only the switch
		}
		// A copy: the reader reuses its buffer, the message outlives it.
		m, err := parseMessage(&s.b.pool, append([]byte(nil), line...))
		if err != nil {
			reason = "a line on stdout that is not a JSON-RPC message"
			break
		}
		if !s.refused(m) {
			s.fromChild(m)
		}
	}
	close(s.readerDone)
	go s.end(reason)
}

// refused answers a child's request that no client may receive (any
// request of a stateless child: a stateless client receives none;
// roots/list unless ForwardRoots; any request before the child has
// answered its initialize, which no client reads a stream of) with
// -32601, or a ping before that with an empty result (MCP lets a server
// ping then), and reports whether m was one. It writes from the reader
// itself: a child that sends such requests without reading its stdin
// stops its own output, instead of costing the bridge a goroutine and a
// buffer per request.
func (s *session) refused(m message) bool {
	if m.kind != kindRequest {
		return false
	}
	s.mu.Lock()
	starting := !s.started
	s.mu.Unlock()
	answer := errorResponse(m.id, -32601, "Method not found")
	switch {
	case starting && m.method == "ping":
		answer = append(append([]byte(`{"jsonrpc":"2.0","id":`), m.id...), `,"result":{}}`...)
	case starting, s.stateless, m.method == "roots/list" && !s.b.cfg.ForwardRoots:
	default:
		return false
	}
	if err := s.ch.write(answer, s.b.cfg.RequestTimeout); err != nil {
		go s.end("stdin not writable: " + err.Error())
	}
	return true
}

// readStderr logs the child's stderr, line by line, tagged with the
// route (the bridge's logger) and the user, at most stderrBurst lines at
// once and stderrRate a second after: the lines beyond are counted, not
// logged, so a child cannot flood the proxy's log; the count is logged
// with the last line dropped (a crashing child's last words).
func (s *session) readStderr() {
	defer s.b.wg.Done()
	defer close(s.ch.stderrDone)
	sc := bufio.NewReaderSize(s.ch.stderr, maxStderrLine)
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	dropped, last := 0, ""
	flush := func() {
		if dropped > 0 {
			s.log.Warn("stdio: child stderr lines dropped", "dropped", dropped, "last", last)
			dropped, last = 0, ""
		}
	}
	for {
		line, isPrefix, err := sc.ReadLine()
		if len(line) > 0 {
			if lim.Allow() {
				flush()
				s.log.Info("stdio: child stderr", "line", string(line), "truncated", isPrefix)
			} else {
				dropped++
				last = string(line)
			}
		}
		for isPrefix && err == nil { // the rest of a long line is skipped
			_, isPrefix, err = sc.ReadLine()
		}
		if err != nil {
			flush()
			return
		}
	}
}

// fromChild routes one message of the child to its client: a response
// to the request it answers (with the client's id), progress to the
// request that asked for it, a request of the child to the oldest
// request in flight (a child asks while it serves one) or else one GET
// stream, any other notification to each client session once (notify).
func (s *session) fromChild(m message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	switch m.kind {
	case kindResponse:
		c := s.pending[string(m.id)]
		if c == nil {
			s.log.Warn("stdio: child answer to no request in flight dropped")
			return
		}
		s.forget(c)
		c.resp = m.withID(c.clientID)
		if st := c.log; st != nil {
			c.resp = s.fitEvent(c, c.resp)
			s.appendEvent(st, c.resp)
			st.done = true
			if st.lost && !st.reader {
				s.freeLog(st)
			} else {
				s.expireLater(st)
			}
		}
		close(c.fin)
	case kindRequest:
		// Their ids are kept until the client answers: within max_queued
		// and the session's byte bound, as the messages are.
		if !s.serverReqs[string(m.id)] {
			if len(s.serverReqs) >= s.b.cfg.MaxQueued || s.reqIDBytes+len(m.id) > resumeBytes(s.b.cfg.MaxMessageBytes) {
				s.log.Warn("stdio: child request dropped: too many waiting for the client", "method", m.method)
				return
			}
			s.serverReqs[string(m.id)] = true
			s.reqIDBytes += len(m.id)
		}
		if len(s.inflight) > 0 {
			s.toCall(s.inflight[0], m.raw)
			return
		}
		if s.stateless {
			return // no stream outlives a stateless request
		}
		// One GET stream: one with a reader, else one kept for
		// resumption, else the first to open.
		for _, gets := range []map[string]*sseLog{s.gets, s.getLogs} {
			for _, g := range gets {
				s.appendEvent(g, m.raw)
				return
			}
		}
		s.enqueue("", true, m)
	case kindNotification:
		if m.method == "notifications/progress" {
			tok, _, _ := m.paramMember(&s.b.pool, progressNames, "progressToken")
			if c := s.progress[string(tok)]; c != nil && tok != nil {
				s.toCall(c, m.raw)
				return
			}
		}
		if s.stateless {
			// Its client sessions are the requests in flight: the oldest.
			if len(s.inflight) > 0 {
				s.toCall(s.inflight[0], m.raw)
			}
			return
		}
		if s.sharedKey == "" {
			s.notify("", m)
			return
		}
		// Before its first client session (its initialize), none: dropped,
		// as an own child's are then (on the initialize's stream).
		for _, scope := range s.scopes {
			s.notify(scope, m)
		}
	}
}

// notify puts a notification of the child that is tied to no request on
// one stream of client session scope: its GET stream with a reader, else
// its oldest call in flight, else its GET stream kept for resumption,
// else the queue its next GET stream gets. MCP (2025-11-25, Streamable
// HTTP, "Multiple Connections") has a server send each message on only
// one stream of a session; each client session of a shared child is a
// session of its own to its client, so each gets one copy, on its own
// streams, and never on a call of another session. Called with s.mu held.
func (s *session) notify(scope string, m message) {
	if g := s.gets[scope]; g != nil {
		s.appendEvent(g, m.raw)
		return
	}
	for _, c := range s.inflight {
		if c.scope == scope {
			s.toCall(c, m.raw)
			return
		}
	}
	if g := s.getLogs[scope]; g != nil {
		s.appendEvent(g, m.raw)
		return
	}
	s.enqueue(scope, false, m)
}

// queued is a message of the child kept for a GET stream not yet open:
// that of client session scope, or with any the first of any session.
type queued struct {
	scope string
	any   bool
	msg   []byte
}

// enqueue keeps m for the next GET stream of scope (any: of any client
// session), within the session's bounds (MaxQueued messages and
// resumeBytes in all): beyond, the oldest kept messages go. Called with
// s.mu held.
func (s *session) enqueue(scope string, any bool, m message) {
	maxB := resumeBytes(s.b.cfg.MaxMessageBytes)
	for len(s.queue) > 0 && (len(s.queue) >= s.b.cfg.MaxQueued || s.queueBytes+len(m.raw) > maxB) {
		s.queueBytes -= len(s.queue[0].msg)
		s.queue[0] = queued{}
		s.queue = s.queue[1:]
		s.log.Warn("stdio: child message dropped: queue full (no GET stream open)", "method", m.method)
	}
	s.queue = append(s.queue, queued{scope: scope, any: any, msg: m.raw})
	s.queueBytes += len(m.raw)
}

// takeQueued moves the messages kept for st's client session to st, a
// GET stream being opened. Called with s.mu held.
func (s *session) takeQueued(st *sseLog) {
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool {
		if q.any || q.scope == st.scope {
			s.appendEvent(st, q.msg)
			s.queueBytes -= len(q.msg)
			return true
		}
		return false
	})
}

// toCall puts msg on c's stream: its log (resume.go) or, dropping it if
// the client does not keep up (bounded), its channel.
func (s *session) toCall(c *call, msg []byte) {
	if c.log != nil {
		s.appendEvent(c.log, msg)
		return
	}
	select {
	case c.out <- msg:
	default:
		c.dropped++
		s.log.Warn("stdio: child message dropped: client stream full")
	}
}
