package middleware

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// pendingShards is the number of independently locked parts of a
// pendingSet, so that authorized requests of different principals rarely
// contend while step-ups are pending.
const pendingShards = 16

// pendingSet remembers, in this process, the (principal, scope set) pairs
// this middleware challenged and whose counters a later success must reset.
// It is bounded (maxEntries in total) and entries expire with the step-up
// window. Dropping an entry early (eviction) only means that the counter is
// not reset: the bound fails closed.
//
// The hot path of an authorized request reads one atomic counter and stops
// there when nothing is pending; when something is pending, it hashes the
// principal with hash/maphash and looks it up in one shard, without
// allocating.
type pendingSet struct {
	seed   maphash.Seed
	n      atomic.Int64 // entries held, all shards
	maxPer int          // per shard
	shards [pendingShards]pendingShard
}

type pendingShard struct {
	mu sync.Mutex
	m  map[uint64][]*pendingEntry // by principal hash
	n  int
}

// pendingEntry is one challenged scope set of one principal.
type pendingEntry struct {
	issuer, subject, clientID string
	scopes                    []string // the scope set; shared with the operation, read-only
	storeKey                  string   // the StepUpStore key
	expires                   time.Time
}

func newPendingSet(maxEntries int) *pendingSet {
	s := &pendingSet{seed: maphash.MakeSeed(), maxPer: max(1, (maxEntries+pendingShards-1)/pendingShards)}
	for i := range s.shards {
		s.shards[i].m = map[uint64][]*pendingEntry{}
	}
	return s
}

// empty reports whether nothing is pending: one atomic load.
func (s *pendingSet) empty() bool { return s.n.Load() == 0 }

func (s *pendingSet) hash(p *Principal) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(p.Issuer)
	h.WriteByte(0)
	h.WriteString(p.Subject)
	h.WriteByte(0)
	h.WriteString(p.ClientID)
	return h.Sum64()
}

func (e *pendingEntry) is(p *Principal) bool {
	return e.issuer == p.Issuer && e.subject == p.Subject && e.clientID == p.ClientID
}

// add records that p was challenged for scopes (store key storeKey) until
// expires, replacing an entry for the same key.
func (s *pendingSet) add(p *Principal, scopes []string, storeKey string, expires, now time.Time) {
	h := s.hash(p)
	sh := &s.shards[h%pendingShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list := sh.m[h]
	for _, e := range list {
		if e.storeKey == storeKey && e.is(p) {
			e.expires = expires
			return
		}
	}
	if sh.n >= s.maxPer {
		s.evictLocked(sh, now)
		list = sh.m[h]
	}
	sh.m[h] = append(list, &pendingEntry{
		issuer: p.Issuer, subject: p.Subject, clientID: p.ClientID,
		scopes: scopes, storeKey: storeKey, expires: expires,
	})
	sh.n++
	s.n.Add(1)
}

// evictLocked drops the expired entries of sh, or, if none has expired,
// the entry that expires first.
func (s *pendingSet) evictLocked(sh *pendingShard, now time.Time) {
	var oldH uint64
	oldI := -1
	var oldT time.Time
	dropped := 0
	for h, list := range sh.m {
		kept := list[:0]
		for i, e := range list {
			if !now.Before(e.expires) {
				dropped++
				continue
			}
			if oldI < 0 || e.expires.Before(oldT) {
				oldH, oldI, oldT = h, i, e.expires
			}
			kept = append(kept, list[i])
		}
		if len(kept) == 0 {
			delete(sh.m, h)
		} else {
			sh.m[h] = kept
		}
	}
	if dropped == 0 && oldI >= 0 {
		// Find it again: the list may have been compacted above.
		list := sh.m[oldH]
		for i, e := range list {
			if e.expires.Equal(oldT) {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(sh.m, oldH)
		} else {
			sh.m[oldH] = list
		}
		dropped = 1
	}
	sh.n -= dropped
	s.n.Add(int64(-dropped))
}

// take removes and returns the store keys of p's live entries whose scope
// sets granted satisfies (sat reports that for one set). It does not
// allocate when p has no entry, or none is satisfied.
func (s *pendingSet) take(p *Principal, now func() time.Time, sat func(scopes []string) bool) []string {
	h := s.hash(p)
	sh := &s.shards[h%pendingShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list, ok := sh.m[h]
	if !ok {
		return nil
	}
	var keys []string
	t := now()
	kept := list[:0]
	for _, e := range list {
		switch {
		case !e.is(p):
			kept = append(kept, e)
			continue
		case !t.Before(e.expires):
			// Expired: the counter's window is over anyway.
		case sat(e.scopes):
			keys = append(keys, e.storeKey)
		default:
			kept = append(kept, e)
			continue
		}
		sh.n--
		s.n.Add(-1)
	}
	clear(list[len(kept):])
	if len(kept) == 0 {
		delete(sh.m, h)
	} else {
		sh.m[h] = kept
	}
	return keys
}

// steppedUp resets the step-up counters of p's pending scope sets that
// p's token now satisfies: p was challenged for them and has come back
// with the scopes, so it is not looping. It is called only when something
// is pending, and allocates only when it resets.
func (m *Middleware) steppedUp(ctx context.Context, p *Principal) {
	keys := m.pending.take(p, m.cfg.Now, func(scopes []string) bool { return m.satisfiesAll(p.Scopes, scopes) })
	for _, k := range keys {
		if err := m.cfg.StepUpStore.Reset(ctx, k); err != nil {
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
