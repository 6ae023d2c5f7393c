package middleware

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// pendingPerPrincipal bounds the scope sets remembered for one principal;
// the operation policy has few, so it is reached only by a policy with
// more step-up scope sets than that, and then the set challenged earliest
// is forgotten (its counter is not reset: the bound fails closed).
const pendingPerPrincipal = 16

// pendingSet remembers, in this process, the (user, scope set) pairs this
// middleware challenged and whose counters a later success must reset. It
// holds at most maxEntries users ([Principal.UserID]: whatever the number
// of clients a user acts through, it holds one entry), shared fairly
// between them ([fairlru], each user its own partition, see
// stepUpPartition): when it is full, the least recently challenged entry
// goes, and no user holds more than one, so no user can take more of it
// than another. Each entry holds at most pendingPerPrincipal scope sets.
// Entries expire with the step-up window. Dropping an entry early only
// means that the counter is not reset: the bound fails closed.
//
// The hot path of an authorized request reads one atomic counter and stops
// there when nothing is pending; when something is pending, it looks the
// user up under one lock, without allocating.
type pendingSet struct {
	n  atomic.Int64 // principals held
	mu sync.Mutex
	c  *fairlru.Cache[pendingKey, *pendingPrincipal]
}

// pendingKey identifies a user as Principal.UserID does, without building
// it: subject for a user, client for a client acting for itself.
type pendingKey struct{ issuer, subject, tenant, clientID string }

// pendingPrincipal is the challenged scope sets of one principal.
type pendingPrincipal struct{ sets []pendingEntry }

// pendingEntry is one challenged scope set of one principal.
type pendingEntry struct {
	scopes   []string // the scope set; shared with the operation, read-only
	storeKey string   // the StepUpStore key
	expires  time.Time
}

func newPendingSet(maxEntries int) *pendingSet {
	return &pendingSet{c: fairlru.New[pendingKey, *pendingPrincipal](fairlru.Config{MaxEntries: maxEntries})}
}

// empty reports whether nothing is pending: one atomic load.
func (s *pendingSet) empty() bool { return s.n.Load() == 0 }

func keyOf(p *Principal) pendingKey {
	if acting(p.Subject, p.ClientID) {
		return pendingKey{issuer: p.Issuer, tenant: p.Tenant, clientID: p.ClientID}
	}
	return pendingKey{issuer: p.Issuer, subject: p.Subject, tenant: p.Tenant}
}

// stepUpPartition is the fairness partition of p's step-up state: its
// user ([Principal.UserID]), so that a user acting through any number of
// clients holds one partition, and a client of many users holds none of
// its own (the StepUpStore partition of every user's counters).
func stepUpPartition(p *Principal) string { return p.UserID() }

// add records that p's user was challenged for scopes (store key storeKey) until
// expires, replacing an entry for the same key.
func (s *pendingSet) add(p *Principal, scopes []string, storeKey string, expires, now time.Time) {
	k := keyOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.count()
	pp := &pendingPrincipal{}
	if e := s.c.Peek(k, now); e != nil {
		pp = e.Value
	}
	pp.sets = slices.DeleteFunc(pp.sets, func(e pendingEntry) bool { return e.storeKey == storeKey || !now.Before(e.expires) })
	if len(pp.sets) >= pendingPerPrincipal {
		pp.sets = slices.Delete(pp.sets, 0, 1) // the earliest challenged
	}
	pp.sets = append(pp.sets, pendingEntry{scopes: scopes, storeKey: storeKey, expires: expires})
	last := expires
	for _, e := range pp.sets {
		last = maxTime(last, e.expires)
	}
	s.c.Add(stepUpPartition(p), k, pp, last, now)
}

// count publishes the number of principals held; s.mu is held.
func (s *pendingSet) count() {
	if n := int64(s.c.Len()); s.n.Load() != n {
		s.n.Store(n)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// take removes and returns the store keys of p's live entries whose scope
// sets granted satisfies (sat reports that for one set). It does not
// allocate when p has no entry, or none is satisfied.
func (s *pendingSet) take(p *Principal, now func() time.Time, sat func(scopes []string) bool) []string {
	k := keyOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	e := s.c.Peek(k, t)
	if e == nil {
		s.count() // Peek drops an expired entry
		return nil
	}
	var keys []string
	pp := e.Value
	kept := pp.sets[:0]
	for _, x := range pp.sets {
		switch {
		case !t.Before(x.expires):
			// Expired: the counter's window is over anyway.
		case sat(x.scopes):
			keys = append(keys, x.storeKey)
		default:
			kept = append(kept, x)
		}
	}
	clear(pp.sets[len(kept):])
	pp.sets = kept
	if len(kept) == 0 {
		s.c.RemoveEntry(e)
		s.count()
	}
	return keys
}

// steppedUp resets the step-up counters of p's pending scope sets that
// p's token now satisfies: p was challenged for them and has come back
// with the scopes, so it is not looping. It is called only when something
// is pending, and allocates only when it resets.
func (m *Middleware) steppedUp(ctx context.Context, p *Principal) {
	keys := m.pending.take(p, m.cfg.Now, func(scopes []string) bool { return m.satisfiesAll(p.Scopes, scopes) })
	if keys == nil {
		return
	}
	part := stepUpPartition(p)
	for _, k := range keys {
		if err := m.cfg.StepUpStore.Reset(ctx, part, k); err != nil {
			m.log.LogAttrs(ctx, slog.LevelWarn, "middleware: step-up store reset failed", slog.String("error", err.Error()))
		}
	}
}

// satisfiesAll reports whether granted satisfies every scope of required.
func (m *Middleware) satisfiesAll(granted, required []string) bool {
	for _, r := range required {
		if !m.satisfied(granted, r) {
			return false
		}
	}
	return true
}
