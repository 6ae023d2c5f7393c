package devas

import (
	"errors"
	"sync"
	"time"
)

// Store capacities. Entries expire lazily; a full store first drops
// expired entries, then refuses new ones: a full code store answers
// temporarily_unavailable, a full refresh store issues access tokens
// without refresh tokens. Refreshing never takes room (rotation replaces
// the family's token in place); the revoked set forgets its oldest entry
// when full, and so does the set of spent consent forms.
const (
	maxCodes           = 4096
	maxRefreshFamilies = 16384
	maxRevokedFamilies = 16384
	maxSpentConsents   = 4096
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

// add adds v under key until exp unless an unexpired value is there
// already (added false). A full store first drops expired entries, then
// fails with errStoreFull: it never forgets an unexpired entry.
func (s *store[V]) add(key string, v V, exp, now time.Time) (added bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && now.Before(e.exp) {
		return false, nil
	}
	if _, ok := s.m[key]; !ok && len(s.m) >= s.max {
		for k, e := range s.m {
			if !now.Before(e.exp) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= s.max {
			return false, errStoreFull
		}
	}
	s.m[key] = entry[V]{v, exp}
	return true, nil
}

// addEvict adds v under key until exp, unless an unexpired value is
// there already (then it returns false). It never refuses for lack of
// room: a full store drops expired entries, then the one that expires
// first.
func (s *store[V]) addEvict(key string, v V, exp, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && now.Before(e.exp) {
		return false
	}
	if len(s.m) >= s.max {
		s.evictLocked(now)
	}
	s.m[key] = entry[V]{v, exp}
	return true
}

// evictLocked makes room for one entry: it drops every expired entry and,
// if the store is still full, the one that expires first. s.mu is held.
func (s *store[V]) evictLocked(now time.Time) {
	first, firstExp := "", time.Time{}
	for k, e := range s.m {
		if !now.Before(e.exp) {
			delete(s.m, k)
		} else if first == "" || e.exp.Before(firstExp) {
			first, firstExp = k, e.exp
		}
	}
	if len(s.m) >= s.max {
		delete(s.m, first)
	}
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

// len returns the number of entries, expired or not.
func (s *store[V]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
