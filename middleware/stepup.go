package middleware

import (
	"context"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// StepUpStore counts insufficient_scope challenges for bounded step-up.
// MCP asks clients to retry step-up "no more than a few times"; the
// middleware enforces a bound on its side too, so that a client that
// cannot obtain a scope stops being invited to re-authorize. The bound is
// for loops, not for users: a request that succeeds with the scopes of a
// scope set resets the principal's counter for it (see [Config.StepUpStore]
// for how that works across replicas).
//
// Keys are opaque strings of at most a few hundred bytes built by the
// middleware from the user ([Principal.UserID]: issuer, subject and
// tenant, or the client acting for itself) and the scope set; treat them
// as binary (they contain NUL bytes) and hash them if the backend needs
// short keys. Each key belongs to a partition, also opaque and binary:
// the user, whatever client it acts through (so a user re-registering
// clients at will counts against one bound and holds one partition). A
// bounded store shares its capacity fairly between partitions, so that
// one user cannot fill it for the others (as validate/dpop's ReplayStore
// does), and one user's counters never evict another's; the same key
// always comes with the same partition.
type StepUpStore interface {
	// Incr adds one to the counter of key (in partition) and returns the
	// new count. A counter lives in a fixed window that starts at the Incr
	// that created it (or restarted it) and ends window later: an Incr at
	// or after the end restarts the counter at 1. now is the middleware's
	// clock (Config.Now). An error makes the middleware send the ordinary
	// challenge, uncounted, and log the error.
	Incr(ctx context.Context, partition, key string, window time.Duration, now time.Time) (int, error)

	// Reset deletes the counter of key (in partition), window included:
	// the next Incr of key returns 1 and starts a new window. Resetting a
	// key that has no counter, or whose window has ended, is not an error
	// and does nothing. Reset must be safe to call concurrently with Incr
	// and Reset of the same key; an Incr that completes after Reset
	// returned nil never sees the old count (one that races with it may
	// see either). Reset must not create a counter. The middleware calls
	// it at most once per successful step-up, never on a request when
	// nothing is pending. An error is logged and otherwise ignored: the
	// counter keeps its value, so the principal may reach the terminal
	// answer sooner (the bound fails closed, never open).
	Reset(ctx context.Context, partition, key string) error
}

// memoryStepUpStore is the in-process [StepUpStore] of a Config whose
// StepUpStore is nil, holding at most a fixed number of counters, shared
// fairly between partitions (users): when it is full, expired counters
// are dropped first, then, of the partition holding the most, the counter
// whose window ends first. A user challenged for endless scope sets
// therefore loses only its own counters (which restarts them: its own
// bound loosens), never another user's. It is safe for concurrent use.
type memoryStepUpStore struct {
	mu sync.Mutex
	c  *fairlru.Cache[string, *stepUpCounter]
}

type stepUpCounter struct{ n int }

var _ StepUpStore = (*memoryStepUpStore)(nil)

// newMemoryStepUpStore returns an empty store for at most maxKeys
// counters; maxKeys < 1 means 10000.
func newMemoryStepUpStore(maxKeys int) *memoryStepUpStore {
	if maxKeys < 1 {
		maxKeys = defaultStepUpKeys
	}
	return &memoryStepUpStore{c: fairlru.New[string, *stepUpCounter](fairlru.Config{MaxEntries: maxKeys, ByExpiry: true})}
}

// Incr implements [StepUpStore]. It never returns an error.
func (s *memoryStepUpStore) Incr(_ context.Context, partition, key string, window time.Duration, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.c.Peek(key, now); e != nil {
		e.Value.n++
		return e.Value.n, nil
	}
	s.c.Add(partition, key, &stepUpCounter{n: 1}, now.Add(window), now)
	return 1, nil
}

// incrStepUp counts one challenge of p for the scope set of storeKey, in
// p's user's partition.
func (m *Middleware) incrStepUp(ctx context.Context, p *Principal, storeKey string, now time.Time) (int, error) {
	return m.cfg.StepUpStore.Incr(ctx, stepUpPartition(p), storeKey, m.cfg.StepUpWindow, now)
}

// Reset implements [StepUpStore]. It never returns an error.
func (s *memoryStepUpStore) Reset(_ context.Context, _, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.Remove(key)
	return nil
}

// Len returns the number of counters held, expired ones included.
func (s *memoryStepUpStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Len()
}
