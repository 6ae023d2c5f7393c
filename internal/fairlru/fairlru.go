// Package fairlru is a bounded map whose capacity is shared fairly between
// partitions (a principal, a client, a key): when it is full, an entry of
// the partition that holds the most entries leaves, and of the adding
// partition when it holds as many (ties go against the adder). A
// partition that adds without end therefore evicts only its own entries
// once it is the largest, and never those of a partition no larger than
// itself.
//
// A partition may be divided into subpartitions ([Cache.AddIn]: a client's
// principals, say), shared the same way: when the partition chosen above
// loses an entry, it is one of its subpartition holding the most (the
// adding one when it holds as many; among equals, the one whose
// lowest-ranked entry is lowest). One principal adding without end under a
// client then evicts only its own entries, never those of the client's
// other principals, nor those of another client. [Cache.Add] adds to a
// partition's unnamed subpartition.
//
// Within a subpartition, entries leave lowest rank first. By default the rank
// is the order of insertion, and an entry read with [Cache.Get] since it
// was ranked gets a second chance (it is ranked again as if just added):
// the CLOCK approximation of least-recently-used, whose reads cost a flag
// write instead of a list move. With [Config.ByExpiry] the rank is the
// entry's expiry and there is no second chance: the partition's entry that
// expires first leaves first, which is what a replay cache needs (see
// validate/dpop).
//
// A Cache is not safe for concurrent use: its owner holds a lock around
// every call, as with container/list.
package fairlru

import (
	"container/heap"
	"time"
)

// Config configures a [Cache]; [New] copies it.
type Config struct {
	// MaxEntries bounds the entries held, all partitions together.
	// Values below 1 mean 1.
	MaxEntries int
	// ByExpiry ranks entries by their expiry instead of their insertion
	// order, without second chances.
	ByExpiry bool
	// KeepLast, if true, never evicts the only entry of a partition: when
	// the cache is full and the largest partition holds one entry, Add
	// fails instead. A replay cache sets it, so that a partition's floor
	// (see validate/dpop) outlives its evicted entries.
	KeepLast bool
}

// Cache is the bounded, fairly evicting map. Create it with [New].
type Cache[K comparable, V any] struct {
	cfg   Config
	tick  int64
	m     map[K]*Entry[K, V]
	parts map[string]*part[K, V]
	subs  map[subKey]*sub[K, V] // the named subpartitions (AddIn)
	big   bySize[K, V]          // max-heap of partitions by entry count
	exp   byExpiry[K, V]        // min-heap of the entries that expire
}

// Entry is one held value. Its fields are read-only for the caller.
type Entry[K comparable, V any] struct {
	Key       K
	Value     V
	Partition string
	// Sub is the entry's subpartition ("" for [Cache.Add]).
	Sub string
	// Expires is when the entry stops being returned; zero is never.
	Expires time.Time

	rank int64
	used bool
	sub  *sub[K, V]
	idx  int // in sub.h
	eidx int // in Cache.exp, -1 if Expires is zero
}

// expired reports whether e has expired at now.
func (e *Entry[K, V]) expired(now time.Time) bool {
	return !e.Expires.IsZero() && !now.Before(e.Expires)
}

type part[K comparable, V any] struct {
	name string
	n    int             // entries, all subpartitions together
	own  sub[K, V]       // the unnamed subpartition, of Add
	subs bySubSize[K, V] // max-heap of the non-empty subpartitions
	idx  int             // in Cache.big
}

// sub is a subpartition: its entries by rank.
type sub[K comparable, V any] struct {
	name string
	h    byRank[K, V]
	part *part[K, V]
	idx  int // in part.subs, -1 while empty
}

type subKey struct{ part, sub string }

// New returns an empty Cache.
func New[K comparable, V any](cfg Config) *Cache[K, V] {
	cfg.MaxEntries = max(1, cfg.MaxEntries)
	return &Cache[K, V]{cfg: cfg, m: make(map[K]*Entry[K, V]), parts: make(map[string]*part[K, V]), subs: make(map[subKey]*sub[K, V])}
}

// Get returns the live entry for k and marks it used (a second chance at
// eviction). An expired entry is removed and not returned.
func (c *Cache[K, V]) Get(k K, now time.Time) *Entry[K, V] {
	e := c.Peek(k, now)
	if e != nil {
		e.used = true
	}
	return e
}

// Peek is Get without marking the entry used.
func (c *Cache[K, V]) Peek(k K, now time.Time) *Entry[K, V] {
	e, ok := c.m[k]
	if !ok {
		return nil
	}
	if e.expired(now) {
		c.removeEntry(e)
		return nil
	}
	return e
}

// Add inserts or replaces the entry for k in partition p. When the cache
// is full it first drops the expired entries, then evicts the
// lowest-ranked entry of the largest partition (p itself if no other
// holds more), and returns it. It
// reports ok=false, adding nothing, only with KeepLast when every
// partition holds a single live entry.
func (c *Cache[K, V]) Add(p string, k K, v V, expires, now time.Time) (evicted *Entry[K, V], ok bool) {
	return c.AddIn(p, "", k, v, expires, now)
}

// AddIn is [Cache.Add] into subpartition s of partition p: when the
// cache is full and p is the partition that loses an entry, the entry
// leaves p's subpartition holding the most (s itself if no other in p
// holds more).
func (c *Cache[K, V]) AddIn(p, s string, k K, v V, expires, now time.Time) (evicted *Entry[K, V], ok bool) {
	if old, ok := c.m[k]; ok {
		c.removeEntry(old)
	}
	for len(c.m) >= c.cfg.MaxEntries && len(c.exp) > 0 && c.exp[0].expired(now) {
		c.removeEntry(c.exp[0])
	}
	pt := c.parts[p]
	if len(c.m) >= c.cfg.MaxEntries {
		evicted = c.evict(pt, s)
		if evicted == nil {
			return nil, false
		}
		pt = c.parts[p] // evicting its last entry removes the partition
	}
	if pt == nil {
		pt = &part[K, V]{name: p}
		pt.own = sub[K, V]{part: pt, idx: -1}
		c.parts[p] = pt
		heap.Push(&c.big, pt)
	}
	sb := c.sub(pt, s)
	if sb == nil {
		sb = &sub[K, V]{name: s, part: pt, idx: -1}
		c.subs[subKey{p, s}] = sb
	}
	e := &Entry[K, V]{Key: k, Value: v, Partition: p, Sub: s, Expires: expires, sub: sb, eidx: -1}
	if !expires.IsZero() {
		heap.Push(&c.exp, e)
	}
	if c.cfg.ByExpiry {
		e.rank = expires.UnixNano()
	} else {
		c.tick++
		e.rank = c.tick
	}
	c.m[k] = e
	heap.Push(&sb.h, e)
	if sb.idx < 0 {
		heap.Push(&pt.subs, sb)
	} else {
		heap.Fix(&pt.subs, sb.idx)
	}
	pt.n++
	heap.Fix(&c.big, pt.idx)
	return evicted, true
}

// sub returns subpartition s of pt, or nil if it holds nothing.
func (c *Cache[K, V]) sub(pt *part[K, V], s string) *sub[K, V] {
	if s == "" {
		return &pt.own
	}
	return c.subs[subKey{pt.name, s}]
}

// evict removes and returns the lowest-ranked entry of the largest
// subpartition of the largest partition, adding (partition p, then
// subpartition s) if it is as large, giving used entries their second
// chance; nil if KeepLast forbids it.
func (c *Cache[K, V]) evict(adding *part[K, V], s string) *Entry[K, V] {
	if len(c.big) == 0 {
		return nil
	}
	pt := c.big[0]
	if adding != nil && adding.n >= pt.n {
		pt = adding
	}
	if c.cfg.KeepLast && pt.n <= 1 {
		return nil
	}
	var as *sub[K, V] // the adding subpartition, if it holds any
	if pt == adding {
		if as = c.sub(pt, s); as != nil && as.idx < 0 {
			as = nil
		}
	}
	// Each pass clears one used flag, so this ends within pt.n+1.
	for {
		sb := pt.subs[0]
		if as != nil && len(as.h) >= len(sb.h) {
			sb = as
		}
		e := sb.h[0]
		if !e.used || c.cfg.ByExpiry {
			c.removeEntry(e)
			return e
		}
		e.used = false
		c.tick++
		e.rank = c.tick
		heap.Fix(&sb.h, 0)
		heap.Fix(&pt.subs, sb.idx)
	}
}

// Remove deletes the entry for k, if any.
func (c *Cache[K, V]) Remove(k K) {
	if e, ok := c.m[k]; ok {
		c.removeEntry(e)
	}
}

// RemoveEntry deletes e if it is still the entry held for its key.
func (c *Cache[K, V]) RemoveEntry(e *Entry[K, V]) {
	if cur, ok := c.m[e.Key]; ok && cur == e {
		c.removeEntry(e)
	}
}

func (c *Cache[K, V]) removeEntry(e *Entry[K, V]) {
	delete(c.m, e.Key)
	if e.eidx >= 0 {
		heap.Remove(&c.exp, e.eidx)
		e.eidx = -1
	}
	sb := e.sub
	pt := sb.part
	heap.Remove(&sb.h, e.idx)
	pt.n--
	if len(sb.h) == 0 {
		heap.Remove(&pt.subs, sb.idx)
		sb.idx = -1
		if sb != &pt.own {
			delete(c.subs, subKey{pt.name, sb.name})
		}
	} else {
		heap.Fix(&pt.subs, sb.idx)
	}
	if pt.n == 0 {
		heap.Remove(&c.big, pt.idx)
		delete(c.parts, pt.name)
		return
	}
	heap.Fix(&c.big, pt.idx)
}

// Oldest returns the entry that expires first, or nil if none expires.
func (c *Cache[K, V]) Oldest() *Entry[K, V] {
	if len(c.exp) == 0 {
		return nil
	}
	return c.exp[0]
}

// Len returns the number of entries held, expired ones not yet dropped
// included.
func (c *Cache[K, V]) Len() int { return len(c.m) }

// PartitionLen returns the number of entries partition p holds.
func (c *Cache[K, V]) PartitionLen(p string) int {
	if pt := c.parts[p]; pt != nil {
		return pt.n
	}
	return 0
}

// SubLen returns the number of entries subpartition s of partition p
// holds.
func (c *Cache[K, V]) SubLen(p, s string) int {
	if pt := c.parts[p]; pt != nil {
		if sb := c.sub(pt, s); sb != nil {
			return len(sb.h)
		}
	}
	return 0
}

// byRank is a min-heap of entries by rank (container/heap).
type byRank[K comparable, V any] []*Entry[K, V]

func (h byRank[K, V]) Len() int           { return len(h) }
func (h byRank[K, V]) Less(i, j int) bool { return h[i].rank < h[j].rank }
func (h byRank[K, V]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *byRank[K, V]) Push(x any) {
	e := x.(*Entry[K, V])
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *byRank[K, V]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// bySize is a max-heap of partitions by entry count (container/heap).
type bySize[K comparable, V any] []*part[K, V]

func (h bySize[K, V]) Len() int           { return len(h) }
func (h bySize[K, V]) Less(i, j int) bool { return h[i].n > h[j].n }
func (h bySize[K, V]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *bySize[K, V]) Push(x any) {
	p := x.(*part[K, V])
	p.idx = len(*h)
	*h = append(*h, p)
}
func (h *bySize[K, V]) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

// bySubSize is a max-heap of non-empty subpartitions by entry count, ties
// broken by lowest rank (container/heap).
type bySubSize[K comparable, V any] []*sub[K, V]

func (h bySubSize[K, V]) Len() int { return len(h) }
func (h bySubSize[K, V]) Less(i, j int) bool {
	if a, b := len(h[i].h), len(h[j].h); a != b || a == 0 {
		return a > b
	}
	return h[i].h[0].rank < h[j].h[0].rank
}
func (h bySubSize[K, V]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *bySubSize[K, V]) Push(x any) {
	s := x.(*sub[K, V])
	s.idx = len(*h)
	*h = append(*h, s)
}
func (h *bySubSize[K, V]) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}

// byExpiry is a min-heap of entries by expiry (container/heap).
type byExpiry[K comparable, V any] []*Entry[K, V]

func (h byExpiry[K, V]) Len() int           { return len(h) }
func (h byExpiry[K, V]) Less(i, j int) bool { return h[i].Expires.Before(h[j].Expires) }
func (h byExpiry[K, V]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].eidx, h[j].eidx = i, j
}
func (h *byExpiry[K, V]) Push(x any) {
	e := x.(*Entry[K, V])
	e.eidx = len(*h)
	*h = append(*h, e)
}
func (h *byExpiry[K, V]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
