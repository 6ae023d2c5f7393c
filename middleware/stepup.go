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
// middleware from the principal (issuer, subject, client) and the scope
// set; treat them as binary (they contain NUL bytes) and hash them if the
// backend needs short keys. Each key belongs to a partition, also opaque
// and binary: the principal's issuer and client (or issuer and subject
// for a token without a client). A bounded store shares its capacity
// fairly between partitions, so that one client cannot fill it for the
// others (as validate/dpop's ReplayStore does); the same key always comes
// with the same partition. The in-memory store (Config.StepUpStore nil)
// also shares a partition fairly between its principals, so that one user
// of a shared public client cannot evict the counters of its other users.
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
// fairly between partitions (issuer and client) and, inside a partition,
// between its principals: when it is full, expired counters are dropped
// first, then, of the partition holding the most, the counter of its
// principal holding the most whose window ends first. A client minting
// endless principals therefore loses only its own counters (which
// restarts them: its own bound loosens), never another client's; and one
// principal of a shared public client (one client_id, many users)
// challenged for endless scope sets loses only its own, never those of
// the client's other users. The middleware passes the principal through
// incrIn; through the [StepUpStore] methods (tests), every counter of a
// partition is the unnamed principal's. It is safe for concurrent use.
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
	return s.incrIn(partition, "", key, window, now), nil
}

// incrIn is Incr of a counter of principal (fairlru's subpartition) in
// partition.
func (s *memoryStepUpStore) incrIn(partition, principal, key string, window time.Duration, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.c.Peek(key, now); e != nil {
		e.Value.n++
		return e.Value.n
	}
	s.c.AddIn(partition, principal, key, &stepUpCounter{n: 1}, now.Add(window), now)
	return 1
}

// incrStepUp counts one challenge of p for the scope set of storeKey: in
// the in-memory store with p's subject as the second fairness level, in a
// Config.StepUpStore with the partition alone.
func (m *Middleware) incrStepUp(ctx context.Context, p *Principal, storeKey string, now time.Time) (int, error) {
	part := stepUpPartition(p)
	if s, ok := m.cfg.StepUpStore.(*memoryStepUpStore); ok {
		return s.incrIn(part, stepUpSub(p), storeKey, m.cfg.StepUpWindow, now), nil
	}
	return m.cfg.StepUpStore.Incr(ctx, part, storeKey, m.cfg.StepUpWindow, now)
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
