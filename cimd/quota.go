package cimd

import (
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

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
	max    int
	window time.Duration

	mu   sync.Mutex
	logs *fairlru.Cache[string, *[]time.Time]
}

func newQuota(maxPerNetwork int, window time.Duration, maxNetworks int) *quota {
	return &quota{
		max:    maxPerNetwork,
		window: window,
		logs:   fairlru.New[string, *[]time.Time](fairlru.Config{MaxEntries: maxNetworks}),
	}
}

// take counts one registration of network part at now. If the network
// already holds max registrations younger than the window it counts
// nothing and returns how long until the oldest leaves the window.
func (q *quota) take(part string, now time.Time) (ok bool, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var log *[]time.Time
	if e := q.logs.Get(part, now); e != nil {
		log = e.Value
	} else {
		log = new([]time.Time)
	}
	cut := 0
	for cut < len(*log) && !now.Before((*log)[cut].Add(q.window)) {
		cut++
	}
	*log = (*log)[cut:]
	if len(*log) >= q.max {
		return false, (*log)[0].Add(q.window).Sub(now)
	}
	*log = append(*log, now)
	q.logs.Add(part, part, log, now.Add(q.window), now)
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
