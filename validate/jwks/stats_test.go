package jwks

import "time"

// stats is a point-in-time view of a Source's counters, for this
// package's tests.
type stats struct {
	Fetches     int // refresh attempts started
	Failures    int // refresh attempts that produced no new key set
	Keys        int // usable keys served
	LastSuccess time.Time
	LastError   error
}

func (s *Source) stats() stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := stats{
		Fetches:     int(s.fetches.Load()),
		Failures:    int(s.failures.Load()),
		LastSuccess: s.lastSuccess,
		LastError:   s.lastErr,
	}
	if set := s.set.Load(); set != nil {
		st.Keys = set.n
	}
	return st
}

// FetchesOf is stats().Fetches for the external tests (package jwks_test).
func FetchesOf(s *Source) int { return int(s.fetches.Load()) }

// RunningJoins reports, for the external tests, whether a refresh is
// running and how many calls joined it rather than starting it.
func RunningJoins(s *Source) (running bool, joined int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		return false, 0
	}
	return true, s.running.joined
}
