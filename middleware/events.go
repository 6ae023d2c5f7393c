package middleware

import (
	"container/heap"
	"errors"
	"hash/maphash"
	"math"
	"net/http"
	"sync"
	"time"
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
//
// It is fairlru's policy (internal/fairlru: when full, drop the expired
// IDs, then evict the oldest ID of the principal holding the most, the
// adder's own when it holds as many) for the one case of a fixed TTL and
// no reads that rank: an ID's rank and its expiry then both follow the
// order in which IDs were last sent, so two lists in that order (of all
// IDs, of each principal's) replace fairlru's three heaps of entries;
// only the heap of principals by count is left (as many as principals
// hold IDs, updated as fairlru did, so that ties fall the same way). An ID is held as two independently
// keyed 64-bit hashes of its path and ID (no string is built): the first
// is the map key, the second must match too, so a pair of IDs whose first
// hashes collide is two IDs (the later replaces the earlier, which can
// then not be resumed from: fail closed), and only a collision of both,
// 128 keyed bits, could make one ID pass for another.
type eventTable struct {
	seed, check maphash.Seed
	mu          sync.Mutex
	max         int
	ttl         int64
	now         func() time.Time
	m           map[uint64]int32 // first hash to index in ents
	ents        []eventEntry     // slab: live ones, and the free list (int32 indices: max is capped at MaxInt32)
	free        int32            // head of the free list in ents
	all         eventList        // live entries, in order of last sending
	parts       map[string]*eventPart
	big         eventParts // max-heap of partitions by n
	// client: SessionConfig.BindClient; owners are principals' IDs, not
	// their UserIDs (sessions.owner).
	client bool
}

// eventEntry is one ID: where it went (owner, or shared when it went to
// several principals: no one may resume from it), until when.
type eventEntry struct {
	key, check uint64
	owner      string
	part       *eventPart // the principal it first went to
	expires    int64      // UnixNano
	shared     bool
	all, own   eventLinks // in eventTable.all; in part.ids (next: free list)
}

// eventPart is a user's IDs (userOf of their owners), oldest first.
type eventPart struct {
	name string
	n    int
	ids  eventList
	idx  int // in eventTable.big
}

type eventLinks struct{ prev, next int32 }

// eventList is a doubly linked list of entries, by index (-1: none).
type eventList struct{ head, tail int32 }

const noEvent = -1

func newEventTable(maxIDs int, ttl time.Duration, now func() time.Time) *eventTable {
	return &eventTable{
		seed: maphash.MakeSeed(), check: maphash.MakeSeed(),
		max: min(max(1, maxIDs), math.MaxInt32), ttl: int64(ttl), now: now,
		m: map[uint64]int32{}, parts: map[string]*eventPart{},
		free: noEvent, all: eventList{noEvent, noEvent},
	}
}

// hashes returns the two keyed hashes of id sent on path.
func (t *eventTable) hashes(path string, id []byte) (key, check uint64) {
	var h maphash.Hash
	h.SetSeed(t.seed)
	_, _ = h.WriteString(path)
	_ = h.WriteByte(0)
	_, _ = h.Write(id)
	key = h.Sum64()
	h.SetSeed(t.check)
	_, _ = h.WriteString(path)
	_ = h.WriteByte(0)
	_, _ = h.Write(id)
	return key, h.Sum64()
}

// record notes that the event id went, on path, to owner (the key of a
// principal's sessions, sessions.owner: its UserID, or its ID with
// BindClient). Partitions are users (userOf), BindClient or not, so the
// clients of one user share the user's.
func (t *eventTable) record(path string, id []byte, owner string) {
	key, check := t.hashes(path, id)
	now := t.now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.m[key]; ok {
		e := &t.ents[i]
		if e.check == check && now < e.expires {
			// Sent again: to the same principal it is renewed; to
			// another, no one may resume from it any more. Either way
			// it is now the newest, of all and of its partition.
			e.shared = e.shared || e.owner != owner
			e.expires = now + t.ttl
			t.moveToBack(&t.all, i, allLinks)
			t.moveToBack(&e.part.ids, i, ownLinks)
			// Its partition's count is unchanged, but fairlru removed
			// and added it again: the heap moves as it did there.
			pt := e.part
			pt.n--
			heap.Fix(&t.big, pt.idx)
			pt.n++
			heap.Fix(&t.big, pt.idx)
			return
		}
		t.remove(i) // expired, or another ID: it leaves
	}
	for len(t.m) >= t.max && t.all.head != noEvent && now >= t.ents[t.all.head].expires {
		t.remove(t.all.head)
	}
	user := userOf(owner)
	pt := t.parts[user]
	if len(t.m) >= t.max {
		victim := t.big[0]
		if pt != nil && pt.n >= victim.n {
			victim = pt
		}
		t.remove(victim.ids.head)
		pt = t.parts[user] // evicting its last ID removes the partition
	}
	if pt == nil {
		pt = &eventPart{name: user, ids: eventList{noEvent, noEvent}}
		t.parts[user] = pt
		heap.Push(&t.big, pt)
	}
	i := t.free
	if i == noEvent {
		t.ents = append(t.ents, eventEntry{})
		i = int32(len(t.ents) - 1)
	} else {
		t.free = t.ents[i].own.next
	}
	t.ents[i] = eventEntry{key: key, check: check, owner: owner, part: pt, expires: now + t.ttl}
	t.pushBack(&t.all, i, allLinks)
	t.pushBack(&pt.ids, i, ownLinks)
	t.m[key] = i
	pt.n++
	heap.Fix(&t.big, pt.idx)
}

// owns reports whether the event id was sent on path to p alone.
func (t *eventTable) owns(path, id string, p *Principal) bool {
	key, check := t.hashes(path, []byte(id))
	now := t.now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.m[key]
	if !ok {
		return false
	}
	e := &t.ents[i]
	if now >= e.expires {
		t.remove(i)
		return false
	}
	if t.client {
		return e.check == check && !e.shared && p.isID(e.owner)
	}
	return e.check == check && !e.shared && p.isUserID(e.owner)
}

// remove drops the live entry i.
func (t *eventTable) remove(i int32) {
	e := &t.ents[i]
	pt := e.part
	delete(t.m, e.key)
	t.unlink(&t.all, i, allLinks)
	t.unlink(&pt.ids, i, ownLinks)
	*e = eventEntry{own: eventLinks{next: t.free}}
	t.free = i
	pt.n--
	if pt.n > 0 {
		heap.Fix(&t.big, pt.idx)
		return
	}
	heap.Remove(&t.big, pt.idx)
	delete(t.parts, pt.name)
}

// allLinks and ownLinks select an entry's links in eventTable.all and in
// its partition's list.
const (
	allLinks = iota
	ownLinks
)

func (t *eventTable) links(i int32, which int) *eventLinks {
	if which == allLinks {
		return &t.ents[i].all
	}
	return &t.ents[i].own
}

func (t *eventTable) pushBack(l *eventList, i int32, which int) {
	*t.links(i, which) = eventLinks{prev: l.tail, next: noEvent}
	if l.tail == noEvent {
		l.head = i
	} else {
		t.links(l.tail, which).next = i
	}
	l.tail = i
}

func (t *eventTable) unlink(l *eventList, i int32, which int) {
	ln := *t.links(i, which)
	if ln.prev == noEvent {
		l.head = ln.next
	} else {
		t.links(ln.prev, which).next = ln.next
	}
	if ln.next == noEvent {
		l.tail = ln.prev
	} else {
		t.links(ln.next, which).prev = ln.prev
	}
}

func (t *eventTable) moveToBack(l *eventList, i int32, which int) {
	if l.tail != i {
		t.unlink(l, i, which)
		t.pushBack(l, i, which)
	}
}

// eventParts is a max-heap of partitions by ID count (container/heap),
// updated by the same calls as fairlru's, so that ties between equally
// large partitions fall as they did there.
type eventParts []*eventPart

func (h eventParts) Len() int           { return len(h) }
func (h eventParts) Less(i, j int) bool { return h[i].n > h[j].n }
func (h eventParts) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *eventParts) Push(x any) {
	p := x.(*eventPart)
	p.idx = len(*h)
	*h = append(*h, p)
}
func (h *eventParts) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
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
