package stdiobridge

import "time"

// Making room at a process bound. A client that leaves without DELETE
// (the TypeScript SDK's client closes its connections and sends none)
// leaves its session and child behind until the idle timeout; a user who
// reconnected max_per_user times would then get 503 for that long. So a
// start at a bound (the user's or all children's) first ends the user's
// least recently used idle child: one with no request in flight, no GET
// stream open and no answer kept for a client to resume, which its client can at most resume to find 404 and
// initialize again (MCP: a 404 session starts a new one). Only the
// user's own children are candidates: one user never ends another's.

// idlestLocked returns the user's idle session that was used least
// recently, or nil. Called with b.mu held.
func (b *Bridge) idlestLocked(key string) *session {
	var (
		victim *session
		oldest time.Time
	)
	for _, s := range b.sessions {
		if s.user.Key != key {
			continue
		}
		if last, ok := s.idle(); ok && (victim == nil || last.Before(oldest)) {
			victim, oldest = s, last
		}
	}
	return victim
}

// idle reports whether s has started (a child being initialized is not
// idle before its initialize is written), has no request in flight, no
// GET stream open
// and no answer kept for a client that went before it came (resumable
// for the resume window: ending the session would lose an answer whose
// effects happened), and when it was last used.
func (s *session) idle() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || !s.started || len(s.inflight) > 0 || len(s.gets) > 0 || s.keepsAnswerLocked() {
		return time.Time{}, false
	}
	return s.last, true
}

// keepsAnswerLocked reports whether s keeps the answer of a call whose
// client went before it came (resumable for the resume window). An answer
// written on a connection is kept too (resume.go), but does not count:
// its client most likely read it, and counting it would keep every
// session that answered within the window from being idle. Called with
// s.mu held.
func (s *session) keepsAnswerLocked() bool {
	for _, st := range s.streams {
		if st.c != nil && st.done && !st.delivered && !st.freed {
			return true
		}
	}
	return false
}
