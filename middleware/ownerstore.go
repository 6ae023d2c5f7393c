package middleware

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Owner record kinds: the kind of ID an owner record is for. IDs of
// different kinds never collide in a store.
const (
	// kindSession: an Mcp-Session-Id the server issued (session.go).
	kindSession = "session"
	// kindTask: a task ID the server issued (MCP tasks).
	kindTask = "task"
)

// errOwnersFull: [memoryOwnerStore.Claim] found no room: the store holds
// its maximum of live records, and making room would forget a record of
// another owner. An owner at its quota never gets this error: its own
// least recently used record is forgotten instead.
var errOwnersFull = errors.New("middleware: owner store full")

// OwnerStore records which principal ([Principal.ID]) owns an ID of a
// kind ("session" or "task"), so that only that principal is served
// for it: the middleware's session binding ([SessionConfig].Store) uses
// it. Every record expires ttl after the last Claim or Owner call that
// renewed it. Its methods use only standard types, so a store in another
// package satisfies it without importing this one. Implementations must
// be safe for concurrent use and bounded; an error means the store is
// unavailable (or full), and the middleware then refuses the request
// (fail closed). The middleware keeps them in process when
// SessionConfig.Store is nil; redisstore has one for replicas.
type OwnerStore interface {
	// Claim records owner as the owner of id of kind for ttl, unless
	// another owner holds it, and returns the owner that holds it
	// afterwards: owner when the claim succeeded (or owner held it
	// already: renewed), the other owner otherwise (unchanged).
	Claim(ctx context.Context, kind, id, owner string, ttl time.Duration) (holder string, err error)
	// Owner returns the owner of id of kind and renews its record for
	// ttl, or "" when there is none (never claimed, forgotten, expired,
	// evicted).
	Owner(ctx context.Context, kind, id string, ttl time.Duration) (string, error)
	// Forget removes the record of id of kind, if any.
	Forget(ctx context.Context, kind, id string) error
}

// Defaults of [memoryOwnerConfig].
const (
	// defaultMaxOwnerRecords bounds a [memoryOwnerStore] whose Max is zero.
	defaultMaxOwnerRecords = 10000
	// defaultOwnerQuota is the per-owner quota of a [memoryOwnerStore]
	// whose PerOwner is zero.
	defaultOwnerQuota = 100
)

// memoryOwnerConfig configures a [memoryOwnerStore].
type memoryOwnerConfig struct {
	// Max bounds the records held, all kinds together. Zero means
	// 10000.
	Max int
	// PerOwner is each user's quota of records of one kind, whatever the
	// clients its owners name ([Principal.UserID]): a Claim by an owner
	// whose user is at its quota forgets that user's least recently used
	// record of the kind, never another user's. Zero means 100; it is
	// capped at Max.
	PerOwner int
	// Now is the clock of the expiries. Nil means time.Now.
	Now func() time.Time
}

// memoryOwnerStore is an in-process [OwnerStore]: bounded, with per-owner
// quotas, expired records dropped first. Create it with
// [newMemoryOwnerStore]; it is safe for concurrent use.
type memoryOwnerStore struct {
	mu  sync.Mutex
	t   ownerTable
	now func() time.Time
}

// newMemoryOwnerStore returns an empty store.
func newMemoryOwnerStore(cfg memoryOwnerConfig) *memoryOwnerStore {
	if cfg.Max <= 0 {
		cfg.Max = defaultMaxOwnerRecords
	}
	if cfg.PerOwner <= 0 {
		cfg.PerOwner = defaultOwnerQuota
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	quota := min(cfg.PerOwner, cfg.Max)
	return &memoryOwnerStore{t: newOwnerTable(cfg.Max, func(string) int { return quota }, kindUser), now: cfg.Now}
}

var _ OwnerStore = (*memoryOwnerStore)(nil)

func ownerKey(kind, id string) string { return kind + "\x00" + id }

// kindUser is the quota group of a [memoryOwnerStore] record's owner
// (kind, NUL, owner): the kind and the owner's user, so that the clients
// of one user share its quota of each kind.
func kindUser(owner string) string {
	kind, o, _ := strings.Cut(owner, "\x00")
	if u := userOf(o); u != o {
		return kind + "\x00" + u
	}
	return owner
}

// Claim implements [OwnerStore]. A full store whose room would cost
// another owner's live record is errOwnersFull.
func (s *memoryOwnerStore) Claim(_ context.Context, kind, id, owner string, ttl time.Duration) (string, error) {
	now := s.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ownerKey(kind, id)
	if e := s.t.get(key, now); e != nil && e.owner[len(kind)+1:] != owner {
		return e.owner[len(kind)+1:], nil
	}
	if _, err := s.t.add(key, kind+"\x00"+owner, nil, now, now+int64(ttl)); err != nil {
		return "", err
	}
	return owner, nil
}

// Owner implements [OwnerStore].
func (s *memoryOwnerStore) Owner(_ context.Context, kind, id string, ttl time.Duration) (string, error) {
	now := s.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.t.get(ownerKey(kind, id), now)
	if e == nil {
		return "", nil
	}
	s.t.touch(e, now+int64(ttl))
	return e.owner[len(kind)+1:], nil
}

// Forget implements [OwnerStore].
func (s *memoryOwnerStore) Forget(_ context.Context, kind, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.t.byID[ownerKey(kind, id)]; e != nil {
		s.t.remove(e)
	}
	return nil
}

// Len returns the number of records held, expired ones not yet dropped
// included.
func (s *memoryOwnerStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.t.byID)
}

// ownerTable is the bounded owner map of [memoryOwnerStore] and of the
// middleware's session table: records in one list by last use (least
// recent first) and in one list per owner, so that the oldest record, an
// owner's oldest record and a record by ID are found in O(1). It does not
// lock; its users do.
type ownerTable struct {
	byID    map[string]*ownerEntry
	byOwner map[string]*ownerQueue
	all     ownerList // by last use, least recent first
	max     int
	quota   func(group string) int
	// group maps an owner to the key its quota is counted under (its
	// user: userOf), so that the owners of one user share one quota.
	group func(owner string) string
}

type ownerEntry struct {
	id, owner string
	expires   int64        // Unix nanoseconds
	next      http.Handler // the handler holding the session (session table only)
	all, mine ownerLink
	q         *ownerQueue
	unclaimed bool // a session refused before it was recorded (session.go)
	active    int  // requests in the session being served (session.go): it does not expire while > 0
}

// live reports whether e has not expired at now: a session with a request
// being served (a GET stream above all) stays live past its idle timeout.
func (e *ownerEntry) live(now int64) bool { return e.active > 0 || now < e.expires }

type ownerQueue struct {
	owner string // the group
	n     int
	list  ownerList
}

type ownerLink struct{ prev, next *ownerEntry }

// ownerList is an intrusive doubly linked list; which link (all or mine)
// it threads through is chosen by its mine flag.
type ownerList struct {
	head, tail *ownerEntry
	mine       bool
}

func (l *ownerList) link(e *ownerEntry) *ownerLink {
	if l.mine {
		return &e.mine
	}
	return &e.all
}

func (l *ownerList) pushBack(e *ownerEntry) {
	k := l.link(e)
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		l.link(l.tail).next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *ownerList) unlink(e *ownerEntry) {
	k := l.link(e)
	if k.prev != nil {
		l.link(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		l.link(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next = nil, nil
}

func (l *ownerList) moveToBack(e *ownerEntry) {
	if l.tail == e {
		return
	}
	l.unlink(e)
	l.pushBack(e)
}

// errOwned: ownerTable.add of an ID another live owner holds.
var errOwned = errors.New("middleware: ID owned by another principal")

func newOwnerTable(max int, quota func(group string) int, group func(owner string) string) ownerTable {
	return ownerTable{
		byID:    map[string]*ownerEntry{},
		byOwner: map[string]*ownerQueue{},
		max:     max,
		quota:   quota,
		group:   group,
	}
}

// get returns the live entry of id, or nil. An expired entry is removed.
func (t *ownerTable) get(id string, now int64) *ownerEntry {
	e := t.byID[id]
	if e == nil {
		return nil
	}
	if !e.live(now) {
		t.remove(e)
		return nil
	}
	return e
}

// touch renews e until expires and makes it the most recently used.
func (t *ownerTable) touch(e *ownerEntry, expires int64) {
	e.expires = expires
	t.all.moveToBack(e)
	e.q.list.moveToBack(e)
}

func (t *ownerTable) remove(e *ownerEntry) {
	delete(t.byID, e.id)
	t.all.unlink(e)
	e.q.list.unlink(e)
	if e.q.n--; e.q.n == 0 {
		delete(t.byOwner, e.q.owner)
	}
}

// expired removes and returns (appended to out) up to n expired entries,
// least recently used first. An expired entry with a request being served
// is kept, moved to the back: the end of that request renews it.
func (t *ownerTable) expired(now int64, n int, out []*ownerEntry) []*ownerEntry {
	for ; n > 0 && t.all.head != nil && now >= t.all.head.expires; n-- {
		e := t.all.head
		if e.active > 0 {
			t.all.moveToBack(e)
			continue
		}
		t.remove(e)
		out = append(out, e)
	}
	return out
}

// add records owner for id until expires, with next (may be nil). It
// returns the entries it removed to make room: expired ones, and the
// least recently used one of the owner's group (its user) when the group
// is at its quota. An id of
// another live owner is errOwned; a full table whose room would cost
// another owner's live entry is errOwnersFull.
func (t *ownerTable) add(id, owner string, next http.Handler, now, expires int64) ([]*ownerEntry, error) {
	var out []*ownerEntry
	if e := t.get(id, now); e != nil {
		if e.owner != owner {
			return out, errOwned
		}
		t.touch(e, expires)
		return out, nil
	}
	out = t.expired(now, 8, out) // reclaim a little on every add
	g := t.group(owner)
	q := t.byOwner[g]
	switch {
	case q != nil && q.n >= t.quota(g):
		old := q.list.head
		t.remove(old)
		out = append(out, old)
		if q.n == 0 { // removed from byOwner with its last entry
			q = nil
		}
	case len(t.byID) >= t.max:
		if out = t.expired(now, len(t.byID), out); len(t.byID) >= t.max {
			return out, errOwnersFull
		}
	}
	if q == nil {
		q = &ownerQueue{owner: g, list: ownerList{mine: true}}
		t.byOwner[g] = q
	}
	e := &ownerEntry{id: id, owner: owner, expires: expires, next: next, q: q}
	t.byID[id] = e
	t.all.pushBack(e)
	q.list.pushBack(e)
	q.n++
	return out, nil
}
