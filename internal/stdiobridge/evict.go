package stdiobridge

import "time"

// Making room at a process bound. A client that leaves without DELETE
// (the TypeScript SDK's client closes its connections and sends none)
// leaves its session and child behind until the idle timeout; a user who
// reconnected max_per_user times would then get 503 for that long. So a
// start at a bound (the user's or all children's) first ends the user's
// least recently used idle child: one with no request in flight, no GET
// stream open and no answer kept for a client to resume, which its client can at most resume to find 404 and
// initialize again (MCP: a 404 session starts a new one).
//
// At max_children only, when the user has no idle child of their own and
// is under max_per_user, the least recently used child of any user that
// has been idle for othersIdleAfter ends instead: otherwise max_children
// / max_per_user users whose clients left without DELETE (16 at the
// defaults) would lock every other user out for the idle timeout. A child
// in use (a request in flight, a GET stream open, an answer kept, used
// within othersIdleAfter) never ends for another user, and a child is
// never handed over: the new user gets a new one. One user can so end at
// most max_per_user other users' idle children at a time.

// othersIdleAfter is how long a child must have been idle before it may
// end to make room for another user at max_children.
const othersIdleAfter = time.Minute

// idlestLocked returns the idle session of the user key ("" for any
// user) that was used least recently, and not after before (zero for any
// time), or nil. Called with b.mu held.
func (b *Bridge) idlestLocked(key string, before time.Time) *session {
	var (
		victim *session
		oldest time.Time
	)
	for _, s := range b.sessions {
		if key != "" && s.user.Key != key {
			continue
		}
		last, ok := s.idle()
		if ok && (before.IsZero() || !last.After(before)) && (victim == nil || last.Before(oldest)) {
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
	return s.idleLocked()
}

func (s *session) idleLocked() (time.Time, bool) {
	if s.ended || !s.started || len(s.inflight) > 0 || len(s.gets) > 0 || s.keepsAnswerLocked() {
		return time.Time{}, false
	}
	return s.last, true
}

// claimIdle marks s ended if it is still idle and was last used not
// after before (zero: any time), and reports whether it did; its caller
// then ends it. The check and the mark are one step under s.mu: a
// request that reaches s from then on gets 404 (send: errEnded) instead
// of being written to a child about to be stopped, which would answer it
// "Server process ended" after its effects may have happened. Called
// with b.mu held.
func (s *session) claimIdle(before time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.idleLocked()
	if !ok || !before.IsZero() && last.After(before) {
		return false
	}
	s.ended = true
	return true
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
