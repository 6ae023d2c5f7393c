package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// incrScript counts in a fixed window: the INCR that creates the counter
// (or finds one without a TTL, which this package never leaves) sets its
// expiry, so the window starts at the first challenge, as
// middleware.MemoryStepUpStore's does. One key: Cluster-safe.
var incrScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// StepUpStore is a middleware.StepUpStore in Redis: every replica that
// uses the same Redis and prefix counts against one bound. Create it with
// [NewStepUpStore]. It is safe for concurrent use.
type StepUpStore struct{ b base }

// NewStepUpStore returns a StepUpStore. Errors wrap [ErrConfig].
func NewStepUpStore(cfg Config) (*StepUpStore, error) {
	b, err := newBase(cfg, "stepup:")
	if err != nil {
		return nil, err
	}
	return &StepUpStore{b: b}, nil
}

// Incr adds one to the counter of key and returns the new count, in one
// round trip (a Lua script: INCR, and PEXPIRE window for a new counter).
// The window is measured by Redis's clock from the Incr that created the
// counter; now is not used, since replicas' clocks differ and Redis
// expires the key itself. window must be at least 1 ms. An error wraps
// [ErrUnavailable]; the middleware then sends the ordinary challenge,
// uncounted (see the package documentation for why).
func (s *StepUpStore) Incr(ctx context.Context, key string, window time.Duration, _ time.Time) (int, error) {
	ms := window.Milliseconds()
	if ms < 1 {
		return 0, fmt.Errorf("%w: step-up window %v is under 1ms", ErrConfig, window)
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	n, err := incrScript.Run(ctx, s.b.rdb, []string{s.b.hashedKey(key)}, ms).Int()
	if err != nil {
		return 0, unavailable("step-up incr", err)
	}
	return n, nil
}

// Reset deletes the counter of key: a request with that key's scope set
// succeeded. An error wraps [ErrUnavailable]; the counter then expires
// with its window.
func (s *StepUpStore) Reset(ctx context.Context, key string) error {
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	if err := s.b.rdb.Del(ctx, s.b.hashedKey(key)).Err(); err != nil {
		return unavailable("step-up reset", err)
	}
	return nil
}
