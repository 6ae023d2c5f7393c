package devas

import (
	"errors"
	"sync"
	"time"
)

// Store capacities. Entries expire lazily; a full store first drops
// expired entries, then refuses new ones (temporarily_unavailable).
const (
	maxCodes         = 4096
	maxPending       = 1024
	maxRefreshTokens = 16384
)

var errStoreFull = errors.New("devas: store full")

// store is a bounded in-memory map with per-entry expiry, safe for
// concurrent use. Keys are hashes of secrets ([hashKey]).
type store[V any] struct {
	mu  sync.Mutex
	max int
	m   map[string]entry[V]
}

type entry[V any] struct {
	v   V
	exp time.Time
}

func newStore[V any](max int) *store[V] {
	return &store[V]{max: max, m: make(map[string]entry[V])}
}

// put adds v under key until exp. It fails with errStoreFull when the
// store is full of unexpired entries.
func (s *store[V]) put(key string, v V, exp, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && len(s.m) >= s.max {
		for k, e := range s.m {
			if !now.Before(e.exp) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= s.max {
			return errStoreFull
		}
	}
	s.m[key] = entry[V]{v, exp}
	return nil
}

// update calls f on the unexpired value under key, under the lock, and
// returns the value as it was before f. ok is false, and f is not called,
// when there is no such value.
func (s *store[V]) update(key string, now time.Time, f func(*V)) (old V, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return old, false
	}
	if !now.Before(e.exp) {
		delete(s.m, key)
		return old, false
	}
	old = e.v
	if f != nil {
		f(&e.v)
		s.m[key] = e
	}
	return old, true
}

// take removes and returns the unexpired value under key.
func (s *store[V]) take(key string, now time.Time) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	delete(s.m, key)
	if !ok || !now.Before(e.exp) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// deleteFunc removes every value for which f returns true.
func (s *store[V]) deleteFunc(f func(V) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.m {
		if f(e.v) {
			delete(s.m, k)
		}
	}
}

// len returns the number of entries, expired or not.
func (s *store[V]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
