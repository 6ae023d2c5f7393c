package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// stepUpPartitionKeys bounds the step-up counters one partition (a user,
// middleware.Principal.UserID, see middleware.StepUpStore) holds at once:
// a user challenged for endless scope sets keeps at most this many, and a
// new one evicts its own counter whose window ends first (which restarts
// that counter: the user's own bound loosens, no one else's). Every user
// has a partition of its own, so the users of one shared client never
// evict each other's counters, and a user's clients share its partition.
const stepUpPartitionKeys = 1000

// incrScript counts in a fixed window, and keeps the partition's index:
// a sorted set of its counters by window end, at most ARGV[2] long, whose
// TTL is the last window's. The INCR that creates the counter (or finds
// one without a TTL, which this package never leaves) sets its expiry, so
// the window starts at the first challenge, as
// the middleware's in-memory store's does, and indexes it, evicting the
// partition's counters whose windows end first beyond the cap. Both keys
// carry the partition's hash tag, and so do the evicted counters: one
// slot, Cluster-safe.
var incrScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  local window = tonumber(ARGV[1])
  redis.call('PEXPIRE', KEYS[1], window)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREM', KEYS[2], KEYS[1])
  local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[2]) + 1
  if over > 0 then
    local old = redis.call('ZPOPMIN', KEYS[2], over)
    for i = 1, #old, 2 do redis.call('DEL', old[i]) end
  end
  redis.call('ZADD', KEYS[2], now + window, KEYS[1])
  if redis.call('PTTL', KEYS[2]) < window then
    redis.call('PEXPIRE', KEYS[2], window)
  end
end
return n
`)

// StepUpStore is a middleware.StepUpStore in Redis: every replica that
// uses the same Redis and prefix counts against one bound. Each partition
// (a user, whatever the client it acts through) holds at most 1 000
// counters: a user challenged for endless scope sets keeps at most that
// many, and a new one evicts its own counter whose window ends first
// (which restarts that counter: the user's own bound loosens, no one
// else's, not even another user of the same client). Every key has a TTL
// (a counter's is its window; a partition index's, the latest window of
// its counters). Create it with [NewStepUpStore]. It is safe for
// concurrent use.
type StepUpStore struct {
	b       base
	maxKeys int
}

// NewStepUpStore returns a StepUpStore. An unusable cfg is an error whose
// text starts "redisstore: invalid config".
func NewStepUpStore(cfg Config) (*StepUpStore, error) {
	b, err := newBase(cfg, "stepup:")
	if err != nil {
		return nil, err
	}
	return &StepUpStore{b: b, maxKeys: stepUpPartitionKeys}, nil
}

// keys returns the counter key of key and the index key of partition,
// both tagged with the partition's hash.
func (s *StepUpStore) keys(partition, key string) (counter, index string) {
	tag := s.b.hashedKey(partition)[len(s.b.prefix):]
	index = s.b.prefix + "{" + tag + "}"
	return index + s.b.hashedKey(key)[len(s.b.prefix):], index
}

// Incr adds one to the counter of key and returns the new count, in one
// round trip (a Lua script: INCR, and for a new counter PEXPIRE window
// and the partition's index). The window is
// measured by Redis's clock from the Incr that created the counter; now
// is not used, since replicas' clocks differ and Redis expires the key
// itself. window must be at least 1 ms. An error wraps [ErrUnavailable];
// the middleware then sends the ordinary challenge, uncounted (see the
// package documentation for why).
func (s *StepUpStore) Incr(ctx context.Context, partition, key string, window time.Duration, _ time.Time) (int, error) {
	ms := window.Milliseconds()
	if ms < 1 {
		return 0, fmt.Errorf("%w: step-up window %v is under 1ms", errConfig, window)
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	counter, index := s.keys(partition, key)
	n, err := incrScript.Run(ctx, s.b.rdb, []string{counter, index}, ms, s.maxKeys).Int()
	if err != nil {
		return 0, unavailable("step-up incr", err)
	}
	return n, nil
}

// Reset deletes the counter of key: a request with that key's scope set
// succeeded. An error wraps [ErrUnavailable]; the counter then expires
// with its window.
func (s *StepUpStore) Reset(ctx context.Context, partition, key string) error {
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	counter, index := s.keys(partition, key)
	_, err := s.b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, counter)
		p.ZRem(ctx, index, counter)
		return nil
	})
	if err != nil {
		return unavailable("step-up reset", err)
	}
	return nil
}
