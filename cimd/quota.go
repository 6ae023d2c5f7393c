package cimd

import (
	"context"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// NetworkQuota counts the registrations each network (an IPv4 /24, an
// IPv6 /48) stored within a window, for [DCRConfig.NetworkClients]. It is
// the consumer-side interface [DCRHandler] needs; the default counts in
// the handler's process, and redisstore.NewClientStore's store implements
// it too, so that replicas sharing the registrations share the quota
// (docs/registration.md, "Replicas"). Implementations must be safe for
// concurrent use and bounded: every network's count holds at most max
// registrations, and forgets each one window after it was taken.
type NetworkQuota interface {
	// Take counts one registration of network at now, unless network
	// already has max registrations taken within the window before now
	// (a registration taken at t counts while now is before t+window);
	// then it counts nothing and returns ok=false and how long until the
	// oldest of them leaves the window. An error means the count is
	// unavailable: the handler then refuses the registration with 503
	// (fail closed).
	Take(ctx context.Context, network string, max int, window time.Duration, now time.Time) (ok bool, wait time.Duration, err error)
	// Give takes back one registration of network that Take counted at
	// now, which was not stored after all. An error is logged; the
	// registration then keeps counting until it leaves the window.
	Give(ctx context.Context, network string, now time.Time) error
}

// quota bounds how many registrations one network (ipPartition) may have
// issued within a window: it keeps, per network, the issue times of the
// registrations it stored during the last window, oldest first, and
// refuses a network that already holds max of them. Refusing is all it
// does: a network at its quota never evicts anything, so the flood of one
// network cannot displace the records, or the quota, of another. The
// per-network logs live in a bounded map shared fairly by network
// ([fairlru], one entry each); a network whose log leaves it (more
// networks than the map holds) starts again at zero, which loosens only
// its own bound.
type quota struct {
	mu   sync.Mutex
	logs *fairlru.Cache[string, *[]time.Time]
}

var _ NetworkQuota = (*quota)(nil)

func newQuota(maxNetworks int) *quota {
	return &quota{
		logs: fairlru.New[string, *[]time.Time](fairlru.Config{MaxEntries: maxNetworks}),
	}
}

// Take implements [NetworkQuota]; it never fails.
func (q *quota) Take(_ context.Context, part string, max int, window time.Duration, now time.Time) (ok bool, wait time.Duration, err error) {
	ok, wait = q.take(part, max, window, now)
	return ok, wait, nil
}

// Give implements [NetworkQuota]; it never fails.
func (q *quota) Give(_ context.Context, part string, issued time.Time) error {
	q.give(part, issued)
	return nil
}

// take counts one registration of network part at now. If the network
// already holds max registrations younger than the window it counts
// nothing and returns how long until the oldest leaves the window.
func (q *quota) take(part string, max int, window time.Duration, now time.Time) (ok bool, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var log *[]time.Time
	if e := q.logs.Get(part, now); e != nil {
		log = e.Value
	} else {
		log = new([]time.Time)
	}
	cut := 0
	for cut < len(*log) && !now.Before((*log)[cut].Add(window)) {
		cut++
	}
	*log = (*log)[cut:]
	if len(*log) >= max {
		return false, (*log)[0].Add(window).Sub(now)
	}
	*log = append(*log, now)
	q.logs.Add(part, part, log, now.Add(window), now)
	return true, 0
}

// give takes back a registration counted by take at issued that was not
// stored after all.
func (q *quota) give(part string, issued time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.logs.Peek(part, issued)
	if e == nil {
		return
	}
	log := e.Value
	for i := len(*log) - 1; i >= 0; i-- {
		if (*log)[i].Equal(issued) {
			*log = append((*log)[:i], (*log)[i+1:]...)
			return
		}
	}
}
