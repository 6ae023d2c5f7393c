package middleware

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// Resumption binding (docs/sessions.md, "Resumption"). A client resumes an
// SSE stream after the last event it received by sending that event's ID
// as Last-Event-ID (MCP 2025-11-25 Streamable HTTP §Resumability). A
// server finds the event within the request's session, and a request
// without one by the ID alone, which every caller shares: a stateless
// mcp-go server with an event store numbers the events of every
// sessionless stream 1, 2, 3… in one store, and replayed alice's tools/call
// result to bob's GET with "Last-Event-ID: 1". A session binds its own
// event IDs (the session is its principal's); so, for every answer to a
// request without a session, the middleware records the ID of each event
// it passes on with the principal it went to, and a request without a
// session that carries Last-Event-ID is passed only when that ID was sent,
// on the same path, to its principal alone. Anything else gets 400 before
// the next handler runs.

// lastEventIDHeader is Last-Event-ID in http.Header's canonical form.
const lastEventIDHeader = "Last-Event-Id"

// errUnknownEventID: a request without a session carries a Last-Event-ID
// that this process did not send its principal (never sent, sent to
// another principal, sent to several, expired, evicted, sent before a
// restart), or several Last-Event-ID headers. Answered 400, as a server
// answers an event ID it does not know.
var errUnknownEventID = errors.New("middleware: unknown Last-Event-ID")

// reasonUnknownEventID: errUnknownEventID (400).
const reasonUnknownEventID Reason = "unknown_event_id"

// eventTable holds the event IDs sent on answers to requests without a
// session: path and ID to the principal they went to. It is bounded
// (SessionConfig.Max entries), shared fairly between principals (one
// principal's streams evict only its own IDs once it holds the most), and
// each ID expires SessionConfig.IdleTimeout after it was last sent.
type eventTable struct {
	mu  sync.Mutex
	c   *fairlru.Cache[string, eventOwner]
	ttl time.Duration
	now func() time.Time
}

// eventOwner is the principal an event ID went to, or shared when it went
// to several (an ID no one may resume from).
type eventOwner struct {
	owner  string
	shared bool
}

func newEventTable(max int, ttl time.Duration, now func() time.Time) *eventTable {
	return &eventTable{c: fairlru.New[string, eventOwner](fairlru.Config{MaxEntries: max}), ttl: ttl, now: now}
}

// eventKey is the table's key of id sent on path.
func eventKey(path string, id []byte) string {
	return path + "\x00" + string(id)
}

// record notes that the event id went, on path, to owner (a Principal.ID).
func (t *eventTable) record(path string, id []byte, owner string) {
	k := eventKey(path, id)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	v, part := eventOwner{owner: owner}, owner
	if e := t.c.Peek(k, now); e != nil {
		// Sent again: to the same principal it is renewed; to another, no
		// one may resume from it any more.
		v, part = e.Value, e.Partition
		v.shared = v.shared || v.owner != owner
	}
	t.c.Add(part, k, v, now.Add(t.ttl), now)
}

// owns reports whether the event id was sent on path to p alone.
func (t *eventTable) owns(path, id string, p *Principal) bool {
	k := path + "\x00" + id
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.c.Peek(k, now)
	return e != nil && !e.Value.shared && p.isID(e.Value.owner)
}

// checkResume checks the Last-Event-ID of r, a request without a session,
// against p: nil when it has none (or an empty one: nothing to resume
// after) or names an event sent to p alone on r's path.
func (m *Middleware) checkResume(r *http.Request, p *Principal) error {
	v, ok := r.Header[lastEventIDHeader]
	switch {
	case !ok:
		return nil
	case len(v) != 1:
		return errUnknownEventID
	case v[0] == "":
		return nil
	case !m.events.owns(r.URL.Path, v[0], p):
		return errUnknownEventID
	}
	return nil
}
