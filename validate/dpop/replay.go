package dpop

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// ReplayStore remembers the proofs already used, so that each "jti" is
// accepted once within the window in which the proof is valid (RFC 9449
// §11.1). Share one store between the replicas of a resource server, or a
// proof refused by one is accepted by another. [MemoryReplayStore] is the
// in-process default.
type ReplayStore interface {
	// Claim records key for ttl and reports true only for the first caller within ttl. An error refuses the proof (fail closed).
	Claim(ctx context.Context, key string, ttl time.Duration) (fresh bool, err error)
}

// DefaultMaxReplayEntries is the capacity of the [MemoryReplayStore]
// [New] creates when Config.ReplayStore is nil.
const DefaultMaxReplayEntries = 100_000

// MemoryReplayStore is an in-process [ReplayStore] holding at most a fixed
// number of unexpired keys. Expired keys are dropped first; when every
// entry is still live, Claim fails with [ErrStoreFull] rather than forget
// a key early (forgetting would let a replay through). It is safe for
// concurrent use; replicas in one process may share one.
type MemoryReplayStore struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	byKey   map[string]time.Time
	expires expiryHeap
}

var _ ReplayStore = (*MemoryReplayStore)(nil)

// NewMemoryReplayStore returns an empty store for at most maxEntries keys
// (maxEntries < 1 means [DefaultMaxReplayEntries]). now is its clock; nil
// means time.Now. Each entry costs roughly 150 bytes plus the key (the
// Verifier's keys are 43 bytes), so the default bounds it near 20 MB.
func NewMemoryReplayStore(maxEntries int, now func() time.Time) *MemoryReplayStore {
	if maxEntries < 1 {
		maxEntries = DefaultMaxReplayEntries
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryReplayStore{max: maxEntries, now: now, byKey: map[string]time.Time{}}
}

// Claim implements [ReplayStore].
func (s *MemoryReplayStore) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.byKey[key]; ok && now.Before(exp) {
		return false, nil
	}
	for len(s.expires) > 0 && !now.Before(s.expires[0].at) {
		e := heap.Pop(&s.expires).(expiry)
		if at, ok := s.byKey[e.key]; ok && at.Equal(e.at) {
			delete(s.byKey, e.key)
		}
	}
	if _, ok := s.byKey[key]; !ok && len(s.byKey) >= s.max {
		return false, ErrStoreFull
	}
	exp := now.Add(ttl)
	s.byKey[key] = exp
	heap.Push(&s.expires, expiry{key: key, at: exp})
	return true, nil
}

// Len returns the number of keys held, expired ones not yet dropped
// included.
func (s *MemoryReplayStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}

type expiry struct {
	key string
	at  time.Time
}

// expiryHeap is a min-heap of expiries (container/heap).
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
