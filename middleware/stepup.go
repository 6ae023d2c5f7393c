package middleware

import (
	"container/list"
	"context"
	"sync"
	"time"
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
// backend needs short keys.
type StepUpStore interface {
	// Incr adds one to the counter of key and returns the new count. A
	// counter lives in a fixed window that starts at the Incr that created
	// it (or restarted it) and ends window later: an Incr at or after the
	// end restarts the counter at 1. now is the middleware's clock
	// (Config.Now). An error makes the middleware send the ordinary
	// challenge, uncounted, and log the error.
	Incr(ctx context.Context, key string, window time.Duration, now time.Time) (int, error)

	// Reset deletes the counter of key, window included: the next Incr of
	// key returns 1 and starts a new window. Resetting a key that has no
	// counter, or whose window has ended, is not an error and does
	// nothing. Reset must be safe to call concurrently with Incr and Reset
	// of the same key; an Incr that completes after Reset returned nil
	// never sees the old count (one that races with it may see either).
	// Reset must not create a counter. The middleware calls it at most
	// once per successful step-up, never on a request when nothing is
	// pending. An error is logged and otherwise ignored: the counter keeps
	// its value, so the principal may reach the terminal answer sooner
	// (the bound fails closed, never open).
	Reset(ctx context.Context, key string) error
}

// MemoryStepUpStore is an in-process [StepUpStore] holding at most a fixed
// number of keys. When full, expired counters are dropped first, then the
// counter whose window started earliest. It is safe for concurrent use.
type MemoryStepUpStore struct {
	mu      sync.Mutex
	maxKeys int
	byKey   map[string]*list.Element // values are *stepUpEntry
	order   list.List                // by window start, oldest at front
}

type stepUpEntry struct {
	key     string
	count   int
	expires time.Time
}

var _ StepUpStore = (*MemoryStepUpStore)(nil)

// NewMemoryStepUpStore returns an empty store for at most maxKeys
// counters; maxKeys < 1 means [DefaultStepUpKeys].
func NewMemoryStepUpStore(maxKeys int) *MemoryStepUpStore {
	if maxKeys < 1 {
		maxKeys = DefaultStepUpKeys
	}
	return &MemoryStepUpStore{maxKeys: maxKeys, byKey: map[string]*list.Element{}}
}

// Incr implements [StepUpStore]. It never returns an error.
func (s *MemoryStepUpStore) Incr(_ context.Context, key string, window time.Duration, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byKey[key]; ok {
		e := el.Value.(*stepUpEntry)
		if now.Before(e.expires) {
			e.count++
			return e.count, nil
		}
		e.count, e.expires = 1, now.Add(window)
		s.order.MoveToBack(el)
		return 1, nil
	}
	for s.order.Len() > 0 {
		front := s.order.Front()
		e := front.Value.(*stepUpEntry)
		if now.Before(e.expires) && s.order.Len() < s.maxKeys {
			break
		}
		delete(s.byKey, e.key)
		s.order.Remove(front)
	}
	s.byKey[key] = s.order.PushBack(&stepUpEntry{key: key, count: 1, expires: now.Add(window)})
	return 1, nil
}

// Reset implements [StepUpStore]. It never returns an error.
func (s *MemoryStepUpStore) Reset(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byKey[key]; ok {
		delete(s.byKey, key)
		s.order.Remove(el)
	}
	return nil
}

// Len returns the number of counters held, expired ones included.
func (s *MemoryStepUpStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
