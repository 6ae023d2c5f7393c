package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// limit is a parsed "N/duration".
type limit struct {
	n      int64
	window time.Duration
}

// parseLimit parses "N/duration" ("600/1m", "5/10s").
func parseLimit(s string) (limit, error) {
	ns, ds, ok := strings.Cut(s, "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || n <= 0 {
		return limit{}, fmt.Errorf("%q: want N/duration, such as 600/1m", s)
	}
	d, err := time.ParseDuration(ds)
	if err != nil || d < time.Second {
		return limit{}, fmt.Errorf("%q: the window must be a duration of at least 1s", s)
	}
	return limit{n, d}, nil
}

// counter counts events per key in fixed windows.
type counter interface {
	// incr counts one event for key in the window starting at start,
	// returning the count so far.
	incr(ctx context.Context, key string, start time.Time, window time.Duration) (int64, error)
}

// memCounter is a counter in this process, bounded in keys.
type memCounter struct {
	mu     sync.Mutex
	counts map[string]memCount
}

type memCount struct {
	start time.Time
	n     int64
}

// maxCounterKeys bounds the in-memory counters; past it the expired ones
// are dropped, then (under a flood of principals) all.
const maxCounterKeys = 100000

func (m *memCounter) incr(_ context.Context, key string, start time.Time, window time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.counts[key]
	if !ok || !c.start.Equal(start) {
		if len(m.counts) >= maxCounterKeys {
			for k, v := range m.counts {
				if v.start.Add(window).Before(start) || !v.start.Equal(start) {
					delete(m.counts, k)
				}
			}
			if len(m.counts) >= maxCounterKeys {
				clear(m.counts)
			}
		}
		c = memCount{start: start}
	}
	c.n++
	m.counts[key] = c
	return c.n, nil
}

// redisCounter counts on Redis (INCR and PEXPIRE in one transaction), so
// that replicas share the windows.
type redisCounter struct {
	rdb    redis.UniversalClient
	prefix string
}

// redisTimeout bounds one counter operation.
const redisTimeout = 250 * time.Millisecond

func (r *redisCounter) incr(ctx context.Context, key string, start time.Time, window time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	sum := sha256.Sum256([]byte(key))
	k := r.prefix + "ratelimit:" + hex.EncodeToString(sum[:16]) + ":" + strconv.FormatInt(start.Unix(), 10)
	var incr *redis.IntCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, k)
		p.PExpire(ctx, k, window+time.Second)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return incr.Val(), nil
}

// errRateLimited: a rate limit is exhausted (429).
var errRateLimited = errors.New("proxy: rate limit exceeded")

// limiter applies a route's limits.
type limiter struct {
	principal  *limit
	tools      map[string]limit
	c          counter
	failClosed bool
	now        func() time.Time
}

func newLimiter(rl RateLimit, c counter, now func() time.Time) *limiter {
	if rl.Principal == "" && len(rl.Tools) == 0 {
		return nil
	}
	l := &limiter{c: c, failClosed: rl.FailClosed, now: now, tools: map[string]limit{}}
	if rl.Principal != "" {
		p, _ := parseLimit(rl.Principal)
		l.principal = &p
	}
	for name, s := range rl.Tools {
		l.tools[name], _ = parseLimit(s)
	}
	return l
}

// allow counts a request of principal (route, and the principal's UserID:
// its user, whatever client it uses, so that client IDs chosen at will do
// not multiply a limit) calling tool
// ("" for another method) and returns the Retry-After of a refusal, or
// an error when the counters failed.
func (l *limiter) allow(ctx context.Context, route, principal, tool string) (retryAfter time.Duration, err error) {
	now := l.now()
	check := func(key string, lim limit) (time.Duration, error) {
		start := now.Truncate(lim.window)
		n, err := l.c.incr(ctx, key, start, lim.window)
		if err != nil {
			return 0, err
		}
		if n > lim.n {
			return start.Add(lim.window).Sub(now), errRateLimited
		}
		return 0, nil
	}
	base := strconv.Itoa(len(route)) + ":" + route + principal
	if l.principal != nil {
		if ra, err := check(base, *l.principal); err != nil {
			return ra, err
		}
	}
	if lim, ok := l.tools[tool]; ok && tool != "" {
		return check(base+"\x00tool\x00"+tool, lim)
	}
	return 0, nil
}
