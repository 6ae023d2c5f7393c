package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplayStore is a replay cache in Redis, shared by replicas: the
// ReplayStore of validate/dpop (a proof's jti, or any other one-time
// value). Create it with [NewReplayStore]. It is safe for concurrent use.
type ReplayStore struct{ b base }

// NewReplayStore returns a ReplayStore. Errors wrap [ErrConfig].
func NewReplayStore(cfg Config) (*ReplayStore, error) {
	b, err := newBase(cfg, "replay:")
	if err != nil {
		return nil, err
	}
	return &ReplayStore{b: b}, nil
}

// Claim records key for ttl and reports fresh=true only to the first
// caller, across every replica, with one SET NX PX. The partition is not
// used: Redis holds what its memory allows, with no bound of this
// package's that one partition could fill before the others (size the
// instance so that it never evicts: docs/operations.md). It fails closed: on
// any error (Redis down, timeout, ttl under 1 ms) it returns fresh=false
// and an error wrapping [ErrUnavailable] or [ErrConfig], and the proof
// must be refused.
func (s *ReplayStore) Claim(ctx context.Context, _, key string, ttl time.Duration) (fresh bool, err error) {
	if ttl.Milliseconds() < 1 {
		return false, fmt.Errorf("%w: replay ttl %v is under 1ms", ErrConfig, ttl)
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	err = s.b.rdb.SetArgs(ctx, s.b.hashedKey(key), "1", redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil // already claimed
	}
	return false, unavailable("replay claim", err)
}
