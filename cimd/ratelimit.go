package cimd

import (
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// limiter combines a global token bucket, one bucket per partition (a
// network or a site, see ipPartition and hostPartition) and one bucket per
// key (a host, a client IP). A partition's bucket has half the global
// bucket's rate and burst, so that one network or site, however many keys
// it spreads over, never takes more than half of what the global bucket
// admits: the other half stays for everyone else. The buckets live in
// bounded maps shared fairly by partition ([fairlru]): a partition that
// mints endless keys evicts only its own buckets. An evicted bucket starts
// again full, which its partition's bucket and the global bucket still
// bound.
type limiter struct {
	global *rate.Limiter
	partOf func(key string) string
	rate   rate.Limit
	burst  int
	prate  rate.Limit
	pburst int

	mu    sync.Mutex
	keyed *fairlru.Cache[string, *rate.Limiter] // by key, partitioned by partOf
	parts *fairlru.Cache[string, *rate.Limiter] // by partition
}

func newLimiter(globalRate rate.Limit, globalBurst int, keyRate rate.Limit, keyBurst, maxKeys int, partOf func(string) string) *limiter {
	return &limiter{
		global: rate.NewLimiter(globalRate, globalBurst),
		partOf: partOf,
		rate:   keyRate,
		burst:  keyBurst,
		prate:  globalRate / 2,
		pburst: (globalBurst + 1) / 2,
		keyed:  fairlru.New[string, *rate.Limiter](fairlru.Config{MaxEntries: maxKeys}),
		parts:  fairlru.New[string, *rate.Limiter](fairlru.Config{MaxEntries: maxKeys}),
	}
}

// buckets returns key's bucket and its partition's, creating them.
func (l *limiter) buckets(key string, now time.Time) (k, p *rate.Limiter) {
	part := l.partOf(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.keyed.Get(key, now); e != nil {
		k = e.Value
	} else {
		k = rate.NewLimiter(l.rate, l.burst)
		l.keyed.Add(part, key, k, time.Time{}, now)
	}
	if e := l.parts.Get(part, now); e != nil {
		p = e.Value
	} else {
		p = rate.NewLimiter(l.prate, l.pburst)
		l.parts.Add(part, part, p, time.Time{}, now)
	}
	return k, p
}

// reserve takes one token from key's bucket, its partition's and the
// global bucket at now. If any is empty it takes none and returns how
// long until all would have one.
func (l *limiter) reserve(key string, now time.Time) (ok bool, wait time.Duration) {
	k, p := l.buckets(key, now)
	rs := [...]*rate.Reservation{k.ReserveN(now, 1), p.ReserveN(now, 1), l.global.ReserveN(now, 1)}
	for _, r := range rs {
		if !r.OK() {
			for _, r := range rs {
				r.CancelAt(now)
			}
			return false, time.Hour
		}
		wait = max(wait, r.DelayFrom(now))
	}
	if wait > 0 {
		for _, r := range rs {
			r.CancelAt(now)
		}
		return false, wait
	}
	return true, 0
}

// ipPartition is the partition of a client address (DCR's rate key): its
// IPv4 /24 or IPv6 /48, the usual smallest allocation to one site; a key
// that is not an address or /64 prefix is its own partition.
func ipPartition(key string) string {
	a, err := netip.ParseAddr(key)
	if err != nil {
		pfx, perr := netip.ParsePrefix(key)
		if perr != nil {
			return key
		}
		a = pfx.Addr()
	}
	a = a.Unmap()
	bits := 24
	if a.Is6() {
		bits = 48
	}
	pfx, _ := a.Prefix(bits)
	return pfx.String()
}

// hostPartition is the partition of a client_id host: an IP literal's
// network (as ipPartition), or a name's last two labels (a.b.example.com
// and c.example.com share example.com). Without the public suffix list, a
// name under a public suffix of two labels (example.co.uk) shares its
// partition with that suffix's other names: they share half the global
// budget between them, which bounds them less, never more, than one site.
func hostPartition(host string) string {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return ipPartition(strings.Trim(host, "[]"))
	}
	host = strings.TrimSuffix(host, ".")
	i := strings.LastIndexByte(host, '.')
	if i < 0 {
		return host
	}
	if j := strings.LastIndexByte(host[:i], '.'); j >= 0 {
		return host[j+1:]
	}
	return host
}
