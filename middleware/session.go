package middleware

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of [SessionConfig].
const (
	// defaultMaxSessions bounds the sessions bound at once when
	// SessionConfig.Max is zero.
	defaultMaxSessions = 10000
	// defaultSessionsPerPrincipal is each principal's quota of sessions
	// when SessionConfig.PerPrincipal is zero.
	defaultSessionsPerPrincipal = 32
	// defaultAnonymousSessions is the anonymous principal's quota when
	// SessionConfig.Anonymous is zero.
	defaultAnonymousSessions = 1000
	// defaultSessionIdleTimeout is the idle expiry of a session when
	// SessionConfig.IdleTimeout is zero.
	defaultSessionIdleTimeout = time.Hour
)

// sessionCloseTimeout bounds the internal DELETE that closes an evicted or
// expired session in the next handler.
const sessionCloseTimeout = 10 * time.Second

// sessionHeader is the Streamable HTTP session header (canonical form).
const sessionHeader = "Mcp-Session-Id"

// maxSessionIDBytes bounds an Mcp-Session-Id value.
const maxSessionIDBytes = 256

// SessionConfig configures the binding of MCP sessions to principals,
// which is always on (docs/sessions.md). When the next handler answers a
// request that has no Mcp-Session-Id with a new Mcp-Session-Id, the
// middleware records the session as owned by the request's user
// ([Principal.UserID]: issuer, subject and tenant, or the client acting
// for itself; [Principal.ID], the user and its client, with BindClient;
// the anonymous principal for a public operation). A later request
// carrying that ID is served only for its owner, through whichever client
// when the owner is a user; any other user, the same subject at another
// issuer or tenant included, and any ID the middleware does not know, get
// 404 before the next handler runs. A DELETE the next handler accepts (2xx) or a 404 from
// it for that ID forgets the session. Sessions are bounded: each principal
// has a quota (its user's, whatever its client) and a new session past it
// ends that user's least recently used one, never another user's; a session idle for
// IdleTimeout ends. A session the middleware ends is also closed in the
// next handler, with an internal DELETE carrying its ID. The zero value
// has the documented defaults.
type SessionConfig struct {
	// Max bounds the sessions bound at once in this process. When it is
	// reached and no session has expired, a new session of a principal
	// below its quota is refused with 503 (and closed in the next
	// handler): live sessions of others are never evicted. It also bounds
	// the event IDs recorded for Last-Event-ID without a session
	// (docs/sessions.md, "Resumption"). Zero means 10000.
	Max int
	// PerPrincipal is each user's quota ([Principal.UserID], whatever the
	// clients it acts through, BindClient or not). Zero means 32; it is
	// capped at Max.
	PerPrincipal int
	// Anonymous is the quota of the anonymous principal, which every
	// client of a public operation shares. Zero means
	// 1000; it is capped at Max.
	Anonymous int
	// IdleTimeout ends a session not used for this long, and forgets an
	// event ID sent without a session this long after it was last sent.
	// A session is in use while a request in it is served (a GET stream
	// held open for hours included), and its idle time starts when its
	// last request ends; with a Store, the store's record is renewed when
	// a request starts, every IdleTimeout/2 while it is served, and at its
	// end if it lasted that long. Zero means 1 h.
	IdleTimeout time.Duration
	// Store, if set, also keeps the owner records (kind "session",
	// renewed on every request for IdleTimeout, and while a request is
	// served, see IdleTimeout) so that replicas and
	// restarts agree on them: a session this process does not know is
	// then served when Store names the request's principal as its owner.
	// While Store fails, requests carrying a session ID get 503 (fail
	// closed), logged once per reason. Nil: this process's records only,
	// so every session ID issued before a restart is unknown.
	Store OwnerStore
	// PassUnknown passes a request carrying a session ID the middleware
	// has no record of to the next handler, which then answers it itself
	// (for servers whose sessions are created behind another front end).
	// A known session of another principal is still 404. Defaults to
	// false: unknown session IDs get 404.
	PassUnknown bool
	// BindClient binds a session to the client too ([Principal.ID]): a
	// request in it with another client_id of the same user gets 404, as
	// another user's does (docs/sessions.md, "The user"); so are tasks
	// ("Task not found") and the Last-Event-ID of requests without a
	// session (400). Quotas stay per user. Defaults to false: a session is its user's, whatever the
	// client, so that a client that registers anew at step-up (the go-sdk
	// client with dynamic registration) keeps its session.
	BindClient bool
}

// errUnknownSession: the request's Mcp-Session-Id names no session of its
// principal: never issued, ended, expired, evicted, issued before a
// restart, or another principal's. Answered 404 with a JSON-RPC error,
// the answer for an ended session, so that a client starts a new one.
var errUnknownSession = errors.New("middleware: session not found")

// errSessionHeader: the request has several Mcp-Session-Id headers, or one
// that is empty, longer than 256 bytes or not visible ASCII (MCP
// Streamable HTTP §Session Management). Answered 400.
var errSessionHeader = errors.New("middleware: invalid Mcp-Session-Id header")

// errSessionsFull: the next handler created a session the middleware
// cannot bind: SessionConfig.Max sessions are live and none is the
// principal's own. Answered 503 with Retry-After; the session is closed.
var errSessionsFull = errors.New("middleware: session table full")

// errSessionStore: SessionConfig.Store failed. Answered 503 with
// Retry-After.
var errSessionStore = errors.New("middleware: session store unavailable")

// errSessionCreated: the next handler's answer to a request without a
// session created one with an Mcp-Session-Id the middleware cannot bind
// (several values, empty, longer than 256 bytes, not visible ASCII).
// Answered 503 with Retry-After, as errSessionsFull; the answer is dropped.
var errSessionCreated = errors.New("middleware: next handler created an invalid Mcp-Session-Id")

// errUpgrade: the next handler answered 101 Switching Protocols (or tried
// to take the connection over): MCP asks for no protocol switch, and the
// middleware cannot see what would follow. Answered 502 Bad Gateway, as
// mcpguard proxy answers an upstream's 101; no session is bound, and a
// session the answer created is closed in the next handler.
var errUpgrade = errors.New("middleware: next handler switched protocols")

// errHijack is what a next handler that tries to take the connection over
// (http.ResponseController.Hijack) gets.
var errHijack = errors.New("middleware: the connection of an MCP request cannot be hijacked")

// Reasons of the session binding.
const (
	// reasonUnknownSession: errUnknownSession (404).
	reasonUnknownSession Reason = "unknown_session"
	// reasonSessionHeader: errSessionHeader (400).
	reasonSessionHeader Reason = "session_header"
	// reasonSessionsFull: errSessionsFull (503).
	reasonSessionsFull Reason = "sessions_full"
	// reasonSessionStore: errSessionStore (503).
	reasonSessionStore Reason = "session_store"
	// reasonSessionCreated: errSessionCreated (503).
	reasonSessionCreated Reason = "session_created"
	// reasonUpgrade: errUpgrade (502).
	reasonUpgrade Reason = "upgrade"
)

const bodySessionNotFound = `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`

// bodyBadGateway is the answer to errUpgrade, mcpguard proxy's 502 body.
const bodyBadGateway = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Bad Gateway"}}`

func (c SessionConfig) withDefaults() SessionConfig {
	if c.Max == 0 {
		c.Max = defaultMaxSessions
	}
	if c.PerPrincipal == 0 {
		c.PerPrincipal = defaultSessionsPerPrincipal
	}
	if c.Anonymous == 0 {
		c.Anonymous = defaultAnonymousSessions
	}
	c.PerPrincipal, c.Anonymous = min(c.PerPrincipal, c.Max), min(c.Anonymous, c.Max)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultSessionIdleTimeout
	}
	return c
}

func (c SessionConfig) check() error {
	switch {
	case c.Max < 0, c.PerPrincipal < 0, c.Anonymous < 0:
		return errors.New("negative Sessions bound")
	case c.IdleTimeout < 0:
		return errors.New("negative Sessions.IdleTimeout")
	}
	return nil
}

// sessions is the middleware's session table: the owner of every session
// the next handler created in this process, and that handler, to close it.
type sessions struct {
	mu    sync.Mutex
	t     ownerTable
	idle  int64
	store OwnerStore
	pass  bool
	// client: SessionConfig.BindClient; owners are principals' IDs, not
	// their UserIDs.
	client bool
	pool   sync.Pool // *sessionWriter
	down   storeHealth
}

func newSessions(c SessionConfig) *sessions {
	s := &sessions{idle: int64(c.IdleTimeout), store: c.Store, pass: c.PassUnknown, client: c.BindClient}
	s.t = newOwnerTable(c.Max, func(user string) int {
		if user == anonymousID {
			return c.Anonymous
		}
		return c.PerPrincipal
	}, userOf)
	return s
}

// owner returns the owner key of a session p creates: p's UserID, or its
// ID with BindClient.
func (s *sessions) owner(p *Principal) string {
	if s.client {
		return p.ID()
	}
	return p.UserID()
}

// owns reports whether p may use a session of owner (s.owner(p) ==
// owner), without allocating.
func (s *sessions) owns(p *Principal, owner string) bool {
	if s.client {
		return p.isID(owner)
	}
	return p.isUserID(owner)
}

// sessionID returns the request's Mcp-Session-Id ("" when it has none),
// or errSessionHeader.
func sessionID(h http.Header) (string, error) {
	v := h[sessionHeader]
	switch {
	case len(v) == 0:
		return "", nil
	case len(v) > 1 || len(v[0]) == 0 || len(v[0]) > maxSessionIDBytes:
		return "", errSessionHeader
	}
	for i := 0; i < len(v[0]); i++ {
		if c := v[0][i]; c < 0x21 || c > 0x7e {
			return "", errSessionHeader
		}
	}
	return v[0], nil
}

// bindSession checks the request's session ID, if any, against p before
// next runs. It returns the ID ("" for none), or the error to refuse the
// request with. It also returns the session's entry in this process's
// table, held while the request is served: the caller passes it to
// releaseSession when the request ends (nil: nothing to release). With a
// Store, the hold also renews the store's record while the request is
// served (renewShared).
func (m *Middleware) bindSession(r *http.Request, p *Principal, next http.Handler) (string, heldSession, error) {
	sid, err := sessionID(r.Header)
	if sid == "" || err != nil {
		return "", heldSession{}, err
	}
	var e *ownerEntry
	if m.sessions.store != nil {
		e, err = m.bindShared(r.Context(), sid, p, next)
	} else {
		e, err = m.bindID(sid, p, next)
	}
	h := heldSession{e: e}
	if e != nil && m.sessions.store != nil {
		h.r = m.renewShared(r.Context(), e)
	}
	return sid, h, err
}

// heldSession is a session entry held by a request being served (nil e:
// none), and, with a Store, the renewal of the store's record meanwhile.
// It is a value: without a Store, holding a session allocates nothing.
type heldSession struct {
	e *ownerEntry
	r *renewal // nil without a Store
}

// renewal renews a store's session record while a request is served.
type renewal struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	renewed bool // the timer fired: the request outlived a renewal period
}

// renewShared renews the store's record of h's session every half
// IdleTimeout while the request is served, so that a request that
// outlives IdleTimeout (a GET stream alone in its session) does not let
// the record expire in the store, which would end the session on every
// replica. It stops at releaseSession, or when the record is gone (the
// session was ended meanwhile: it is not revived) or names another owner.
func (m *Middleware) renewShared(ctx context.Context, e *ownerEntry) *renewal {
	s := m.sessions
	period := time.Duration(s.idle) / 2
	ctx = context.WithoutCancel(ctx)
	id, owner := e.id, e.owner
	rn := &renewal{}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.t = time.AfterFunc(period, func() {
		got, err := s.store.Owner(ctx, kindSession, id, time.Duration(s.idle))
		if err != nil {
			m.storeFailed(ctx, err) // retried at the next period
		}
		rn.mu.Lock()
		defer rn.mu.Unlock()
		rn.renewed = true
		if !rn.stopped && (err != nil || got == owner) {
			rn.t.Reset(period)
		}
	})
	return rn
}

// releaseSession ends a request in the session held (from bindSession):
// the session's idle timeout starts again at the request's end, so a
// session is never ended while a request in it (a GET stream) is served.
// With a Store, a request that outlived a renewal period renews the
// store's record once more at its end.
func (m *Middleware) releaseSession(ctx context.Context, held heldSession) {
	s := m.sessions
	if rn := held.r; rn != nil {
		rn.mu.Lock()
		rn.stopped = true
		rn.t.Stop()
		renewed := rn.renewed
		rn.mu.Unlock()
		if renewed {
			if _, err := s.store.Owner(context.WithoutCancel(ctx), kindSession, held.e.id, time.Duration(s.idle)); err != nil {
				m.storeFailed(ctx, err)
			}
		}
	}
	now := m.cfg.Now().UnixNano()
	s.mu.Lock()
	held.e.active--
	if s.t.byID[held.e.id] == held.e {
		s.t.touch(held.e, now+s.idle)
	}
	s.mu.Unlock()
}

// bindID is bindSession for the request's session ID sid, without a
// Store: it returns sid's entry, held, when the request may be served.
func (m *Middleware) bindID(sid string, p *Principal, next http.Handler) (*ownerEntry, error) {
	s := m.sessions
	now := m.cfg.Now().UnixNano()
	s.mu.Lock()
	e := s.t.byID[sid]
	if e != nil && e.live(now) && s.owns(p, e.owner) {
		e.active++
		s.t.touch(e, now+s.idle)
		var ended []*ownerEntry
		if h := s.t.all.head; h != nil && now >= h.expires {
			ended = s.t.expired(now, 8, nil)
		}
		s.mu.Unlock()
		if ended != nil {
			m.endSessions(ended)
		}
		return e, nil
	}
	var ended []*ownerEntry
	if e != nil && !e.live(now) {
		s.t.remove(e)
		ended, e = append(ended, e), nil
	}
	s.mu.Unlock()
	m.endSessions(ended)
	if e == nil && s.pass {
		return nil, nil
	}
	return nil, errUnknownSession
}

// bindShared is bindSession with SessionConfig.Store: the store's record
// decides, and this process's table follows it. It returns sid's entry,
// held, when the request may be served and this process's table has room
// for it.
func (m *Middleware) bindShared(ctx context.Context, sid string, p *Principal, next http.Handler) (*ownerEntry, error) {
	s := m.sessions
	owner, err := s.store.Owner(ctx, kindSession, sid, time.Duration(s.idle))
	if err != nil {
		m.storeFailed(ctx, err)
		return nil, errSessionStore
	}
	s.down.ok(m)
	now := m.cfg.Now().UnixNano()
	s.mu.Lock()
	e := s.t.byID[sid]
	var ended []*ownerEntry
	switch {
	case owner == "" || !s.owns(p, owner):
		// The store ended it (expired, or forgotten by another replica):
		// this process ends it too.
		if e != nil && (owner == "" || e.owner != owner) {
			s.t.remove(e)
			ended = append(ended, e)
		}
	case e == nil: // issued by another replica or before a restart
		ended, _ = s.t.add(sid, owner, next, now, now+s.idle)
		e = s.t.byID[sid] // nil when this process's table had no room
	default:
		s.t.touch(e, now+s.idle)
	}
	var held *ownerEntry
	if owner != "" && s.owns(p, owner) && e != nil && e.owner == owner {
		held = e
		held.active++
	}
	ended = s.t.expired(now, 8, ended)
	s.mu.Unlock()
	m.endSessions(ended)
	switch {
	case owner == "" && s.pass:
		return nil, nil
	case owner == "" || !s.owns(p, owner):
		return nil, errUnknownSession
	}
	return held, nil
}

// isAnonymousSession reports whether r carries the ID of a live session
// of the anonymous principal.
func (m *Middleware) isAnonymousSession(r *http.Request) bool {
	sid, err := sessionID(r.Header)
	if sid == "" || err != nil {
		return false
	}
	s := m.sessions
	if s.store != nil {
		owner, err := s.store.Owner(r.Context(), kindSession, sid, time.Duration(s.idle))
		return err == nil && owner == anonymousID
	}
	now := m.cfg.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.t.byID[sid]
	return e != nil && e.live(now) && e.owner == anonymousID
}

// serveSession runs next for p's request r, whose session ID sid ("" for
// none) bindSession accepted and returned. An answer to a request without one that creates a
// session records it; a DELETE accepted, or a 404, for the ID forgets it.
func (m *Middleware) serveSession(w http.ResponseWriter, r *http.Request, next http.Handler, p *Principal, sid string) {
	sw, _ := m.sessions.pool.Get().(*sessionWriter)
	if sw == nil {
		sw = &sessionWriter{}
	}
	*sw = sessionWriter{ResponseWriter: w, m: m, r: r, p: p, next: next, sid: sid}
	next.ServeHTTP(sw, r)
	if !sw.done {
		sw.WriteHeader(http.StatusOK) // what net/http sends when next writes nothing
	}
	refused, ended := sw.refused, sw.ended
	*sw = sessionWriter{}
	m.sessions.pool.Put(sw)
	if refused != "" {
		ended = append(ended, &ownerEntry{id: refused, owner: m.sessions.owner(p), next: next, unclaimed: true})
	}
	m.endSessions(ended)
}

// sessionWriter watches the answer of next for session headers. It is
// pooled: an authorized request allocates nothing for it.
type sessionWriter struct {
	http.ResponseWriter
	m       *Middleware
	r       *http.Request
	p       *Principal
	next    http.Handler
	sid     string        // the request's session ID; "" for none
	done    bool          // the header was written
	discard bool          // next's answer is replaced by a refusal
	refused string        // a session created but refused, to close
	ended   []*ownerEntry // sessions evicted to make room, to close
}

func (w *sessionWriter) WriteHeader(status int) {
	if w.done {
		if !w.discard {
			w.ResponseWriter.WriteHeader(status)
		}
		return
	}
	h := w.ResponseWriter.Header()
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		// An informational answer (100, 103) is sent with the header map
		// as it is now, before the final one: it passes, without the
		// session header, which is decided on the final status only.
		v, ok := h[sessionHeader]
		delete(h, sessionHeader)
		w.ResponseWriter.WriteHeader(status)
		if ok {
			h[sessionHeader] = v
		}
		return
	}
	w.done = true
	if status == http.StatusSwitchingProtocols {
		w.upgrade(h)
		return
	}
	switch {
	case w.sid == "":
		if _, ok := h[sessionHeader]; !ok {
			break
		}
		created, err := sessionID(h)
		if err != nil {
			err = errSessionCreated // not recorded, and not closed: no ID to close it by
		} else if w.ended, err = w.m.claimSession(w.r.Context(), created, w.p, w.next); err != nil {
			w.refused = created
		}
		if err != nil {
			w.discard = true
			for _, k := range [...]string{sessionHeader, "Content-Length", "Content-Encoding", "Content-Type"} {
				h.Del(k)
			}
			w.m.refuse(w.ResponseWriter, w.r, &refusal{err: err, p: w.p, g: w.p.grant})
			return
		}
	default:
		if v, ok := h[sessionHeader]; ok && (len(v) != 1 || v[0] != w.sid) {
			// An answer in session sid naming another session (or
			// several): the client never learns an ID the middleware did
			// not bind; the answer passes without it. Nothing is closed
			// in the server: the other ID may be another principal's
			// live session.
			delete(h, sessionHeader)
		}
		w.forget(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

// upgrade answers a 101 from next (header h) with 502, fail closed: the
// 101 and whatever next writes after it are dropped, no session is bound,
// and a session the 101 named for a request without one is closed in
// next (it was never recorded).
func (w *sessionWriter) upgrade(h http.Header) {
	if w.sid == "" {
		if created, err := sessionID(h); err == nil && created != "" {
			w.refused = created
		}
	}
	w.discard = true
	for _, k := range [...]string{sessionHeader, "Content-Length", "Content-Encoding", "Content-Type", "Upgrade", "Connection"} {
		h.Del(k)
	}
	w.m.refuse(w.ResponseWriter, w.r, &refusal{err: errUpgrade, p: w.p, g: w.p.grant})
}

// Hijack refuses to hand next the connection (errHijack): an MCP request
// is answered over HTTP, and a handler that took the connection over
// would answer past the middleware (a protocol switch, a session it never
// sees). http.ResponseController finds it before Unwrap.
func (w *sessionWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errHijack
}

// forget forgets the request's session sid when status ends it: a 404
// for it, or a DELETE the next handler accepted.
func (w *sessionWriter) forget(status int) {
	switch {
	case status == http.StatusNotFound:
		w.m.forgetSession(w.r.Context(), w.sid, false)
	case w.r.Method == http.MethodDelete && status >= 200 && status < 300:
		w.m.forgetSession(w.r.Context(), w.sid, true)
	}
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the answer (Server-Sent Events), unless it is discarded.
func (w *sessionWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	if !w.discard {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the writer below.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// claimSession records sid as p's, for next. It returns the sessions it
// evicted to make room (p's own least recently used, or expired ones).
func (m *Middleware) claimSession(ctx context.Context, sid string, p *Principal, next http.Handler) ([]*ownerEntry, error) {
	s := m.sessions
	owner := s.owner(p)
	now := m.cfg.Now().UnixNano()
	s.mu.Lock()
	ended, err := s.t.add(sid, owner, next, now, now+s.idle)
	s.mu.Unlock()
	if err != nil {
		return ended, errSessionsFull // the table is full, or the ID is another's
	}
	if s.store != nil {
		holder, serr := s.store.Claim(ctx, kindSession, sid, owner, time.Duration(s.idle))
		switch {
		case serr != nil && !errors.Is(serr, errOwnersFull):
			m.storeFailed(ctx, serr)
			err = errSessionStore
		case serr != nil || holder != owner:
			err = errSessionsFull
		default:
			s.down.ok(m)
		}
		if err != nil {
			s.mu.Lock()
			if e := s.t.byID[sid]; e != nil {
				s.t.remove(e)
			}
			s.mu.Unlock()
		}
	}
	return ended, err
}

// forgetSession removes sid from the table, and from the store when
// shared (a DELETE the next handler accepted).
func (m *Middleware) forgetSession(ctx context.Context, sid string, shared bool) {
	s := m.sessions
	s.mu.Lock()
	if e := s.t.byID[sid]; e != nil {
		s.t.remove(e)
	}
	s.mu.Unlock()
	if shared && s.store != nil {
		if err := s.store.Forget(ctx, kindSession, sid); err != nil {
			m.storeFailed(ctx, err)
		}
	}
}

// endSessions closes ended sessions in the handler that created them,
// with an internal DELETE carrying the session ID and a principal whose
// ID (or UserID) is the owner's, and whose UserID is the owner's user, in the background (bounded by sessionCloseTimeout),
// and forgets them in the store.
func (m *Middleware) endSessions(ended []*ownerEntry) {
	if len(ended) == 0 {
		return
	}
	go func() {
		for _, e := range ended {
			m.closeSession(e)
		}
	}()
}

func (m *Middleware) closeSession(e *ownerEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), sessionCloseTimeout)
	defer cancel()
	if s := m.sessions; s.store != nil && !e.unclaimed {
		if err := s.store.Forget(ctx, kindSession, e.id); err != nil {
			m.storeFailed(ctx, err)
		}
	}
	if e.next == nil {
		return
	}
	p := &Principal{Anonymous: e.owner == anonymousID}
	if !p.Anonymous {
		p.ownerID = e.owner
	}
	req, err := http.NewRequestWithContext(ContextWithPrincipal(ctx, p), http.MethodDelete, m.cfg.Metadata.Resource, nil)
	if err != nil {
		return // unreachable: Metadata.Resource was parsed by New
	}
	req.Header.Set(sessionHeader, e.id)
	req.Body = http.NoBody // as a server request's, never nil
	req.RemoteAddr = "127.0.0.1:0"
	e.next.ServeHTTP(&closeWriter{h: http.Header{}}, req)
}

// closeWriter discards the answer to an internal DELETE.
type closeWriter struct{ h http.Header }

func (w *closeWriter) Header() http.Header         { return w.h }
func (w *closeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *closeWriter) WriteHeader(int)             {}

// storeHealth logs a failing session store once per reason until it
// works again.
type storeHealth struct {
	mu     sync.Mutex
	failed map[string]bool
}

func storeReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

func (m *Middleware) storeFailed(ctx context.Context, err error) {
	h := &m.sessions.down
	reason := storeReason(err)
	h.mu.Lock()
	seen := h.failed[reason]
	if !seen {
		if h.failed == nil {
			h.failed = map[string]bool{}
		}
		h.failed[reason] = true
	}
	h.mu.Unlock()
	if !seen {
		m.log.LogAttrs(ctx, slog.LevelWarn, "middleware: session store unavailable; requests with a session ID get 503",
			slog.String("reason", reason), slog.String("error", err.Error()))
	}
}

// ok records a working store, so that its next failure is logged again.
func (h *storeHealth) ok(m *Middleware) {
	h.mu.Lock()
	recovered := len(h.failed) > 0
	clear(h.failed)
	h.mu.Unlock()
	if recovered {
		m.log.LogAttrs(context.Background(), slog.LevelInfo, "middleware: session store available again")
	}
}
