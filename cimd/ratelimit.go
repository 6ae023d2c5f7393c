package cimd

import (
	"time"

	"golang.org/x/time/rate"
)

// limiter combines a global token bucket with one bucket per key (a host,
// a client IP). The per-key buckets live in a size-bounded LRU: an evicted
// key starts again with a full bucket, which the global bucket still
// bounds.
type limiter struct {
	global *rate.Limiter
	keyed  *lru[string, *rate.Limiter]
	rate   rate.Limit
	burst  int
}

func newLimiter(globalRate rate.Limit, globalBurst int, keyRate rate.Limit, keyBurst, maxKeys int) *limiter {
	return &limiter{
		global: rate.NewLimiter(globalRate, globalBurst),
		keyed:  newLRU[string, *rate.Limiter](maxKeys),
		rate:   keyRate,
		burst:  keyBurst,
	}
}

// reserve takes one token from key's bucket and one from the global
// bucket at now. If either is empty it takes neither and returns how long
// until both would have one.
func (l *limiter) reserve(key string, now time.Time) (ok bool, wait time.Duration) {
	k := l.keyed.getOrAdd(key, func() *rate.Limiter { return rate.NewLimiter(l.rate, l.burst) })
	kr := k.ReserveN(now, 1)
	gr := l.global.ReserveN(now, 1)
	if !kr.OK() || !gr.OK() {
		kr.CancelAt(now)
		gr.CancelAt(now)
		return false, time.Hour
	}
	wait = max(kr.DelayFrom(now), gr.DelayFrom(now))
	if wait > 0 {
		kr.CancelAt(now)
		gr.CancelAt(now)
		return false, wait
	}
	return true, 0
}
