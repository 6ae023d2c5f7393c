// Package sessionowner remembers which principal created each stateful MCP
// session, for the SDK adapters (gosdk, mcpgo) that bind a session to its
// creator. It holds at most a fixed number of sessions and forgets the
// oldest first. It imports the standard library only.
package sessionowner

import (
	"container/list"
	"sync"
)

// Owners maps session IDs to the ID of the principal that created each.
// Create it with [New]; it is safe for concurrent use.
type Owners struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*list.Element // of *entry
	order list.List                // oldest first
}

type entry struct{ sid, owner string }

// New returns an empty Owners for at most n sessions (n < 1 means 1).
func New(n int) *Owners {
	return &Owners{max: max(n, 1), byID: map[string]*list.Element{}}
}

// Add records owner as the creator of session sid, replacing a previous
// owner of the same sid. A full Owners forgets its oldest session first.
func (o *Owners) Add(sid, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.byID[sid]; e != nil {
		e.Value.(*entry).owner = owner
		return
	}
	for o.order.Len() >= o.max {
		old := o.order.Remove(o.order.Front()).(*entry)
		delete(o.byID, old.sid)
	}
	o.byID[sid] = o.order.PushBack(&entry{sid, owner})
}

// Get returns the owner of session sid and whether sid is known.
func (o *Owners) Get(sid string) (owner string, known bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.byID[sid]; e != nil {
		return e.Value.(*entry).owner, true
	}
	return "", false
}

// Remove forgets session sid.
func (o *Owners) Remove(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.byID[sid]; e != nil {
		o.order.Remove(e)
		delete(o.byID, sid)
	}
}

// Len returns the number of sessions remembered.
func (o *Owners) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.order.Len()
}
