package dpop

import (
	"context"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// ReplayStore remembers the proofs already used, so that each "jti" is
// accepted once within the window in which the proof is valid (RFC 9449
// §11.1). Share one store between the replicas of a resource server, or a
// proof refused by one is accepted by another. [NewMemoryReplayStore] is
// the in-process default.
type ReplayStore interface {
	// Claim records key for ttl and reports true only for the first
	// caller within ttl. partition names who the key belongs to (the
	// Verifier passes [Request.Partition], or the proof key's thumbprint):
	// a bounded store shares its capacity fairly between partitions, so
	// that one principal cannot fill it for the others. An error refuses
	// the proof (fail closed).
	Claim(ctx context.Context, partition, key string, ttl time.Duration) (fresh bool, err error)
}

// defaultMaxReplayEntries is the capacity of the [NewMemoryReplayStore]
// store [New] creates when Config.ReplayStore is nil.
const defaultMaxReplayEntries = 100_000

// floorSweep is how many stale partition floors a memoryReplayStore
// tolerates beyond its entries before it sweeps them.
const floorSweep = 1024

// memoryReplayStore is the store of [NewMemoryReplayStore].
type memoryReplayStore struct {
	mu     sync.Mutex
	now    func() time.Time
	keys   *fairlru.Cache[string, struct{}]
	floors map[string]time.Time // by partition
}

// NewMemoryReplayStore returns an empty in-process [ReplayStore] for at
// most maxEntries keys (maxEntries < 1 means 100000). now is its clock;
// nil means time.Now. Each entry costs roughly 200 bytes plus the key (the
// Verifier's keys are 49 bytes) and its partition, so the default bounds
// it near 30 MB.
//
// The keys are shared fairly between partitions: when the store is full,
// the partition holding the most keys gives up its key that expires
// first. Forgetting a key early must not let its replay through, so the
// store then keeps that partition's floor, the expiry of the forgotten
// key, and refuses as a replay (fresh=false) every later claim of the
// partition that would expire no later than it: only proofs older than
// those the partition already had dropped are refused, and only the
// partition that filled the store. Claim fails (Verify: "replay_store")
// only when every key held is the single key of its own partition. It is
// safe for concurrent use; replicas in one process may share one.
func NewMemoryReplayStore(maxEntries int, now func() time.Time) ReplayStore {
	if maxEntries < 1 {
		maxEntries = defaultMaxReplayEntries
	}
	if now == nil {
		now = time.Now
	}
	return &memoryReplayStore{
		now:    now,
		keys:   fairlru.New[string, struct{}](fairlru.Config{MaxEntries: maxEntries, ByExpiry: true, KeepLast: true}),
		floors: map[string]time.Time{},
	}
}

// Claim implements [ReplayStore].
func (s *memoryReplayStore) Claim(_ context.Context, partition, key string, ttl time.Duration) (bool, error) {
	now := s.now()
	exp := now.Add(ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys.Peek(key, now) != nil {
		return false, nil
	}
	if f, ok := s.floors[partition]; ok {
		if !exp.After(f) {
			return false, nil // it may be a key forgotten early
		}
		if !now.Before(f) {
			delete(s.floors, partition)
		}
	}
	ev, ok := s.keys.Add(partition, key, struct{}{}, exp, now)
	if !ok {
		return false, errStoreFull
	}
	if ev != nil && ev.Expires.After(now) && ev.Expires.After(s.floors[ev.Partition]) {
		s.floors[ev.Partition] = ev.Expires
		s.sweepFloors(now)
	}
	return true, nil
}

// sweepFloors drops the floors that have passed once they outnumber the
// keys by floorSweep. A floor that has not passed belongs to a partition
// that still holds a key (its keys expire no earlier than its floor), so
// after a sweep there are at most as many floors as keys: the sweeps cost
// O(1) per Claim, amortized.
func (s *memoryReplayStore) sweepFloors(now time.Time) {
	if len(s.floors) <= s.keys.Len()+floorSweep {
		return
	}
	for p, f := range s.floors {
		if !now.Before(f) {
			delete(s.floors, p)
		}
	}
}

// len returns the number of keys held, expired ones not yet dropped
// included.
func (s *memoryReplayStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Len()
}
