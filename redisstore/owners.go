package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// claimScript sets the owner record unless another owner holds it, with
// its TTL, and returns the holder, in one round trip. One key:
// Cluster-safe.
var claimScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return cur
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
`)

// ownerScript returns the owner and renews the record's TTL.
var ownerScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return cur
end
return false
`)

// OwnerStore is a middleware.OwnerStore in Redis (middleware
// SessionConfig.Store): replicas that share the Redis and prefix agree on
// which principal owns each session (or task), and so does a restarted
// process. Create it with [NewOwnerStore]; it is safe for concurrent use.
//
// Each record is one key, the prefix and the SHA-256 of the kind and ID
// (so no session ID appears in a key), whose value is the owner's
// middleware.Principal.UserID (issuer, subject and tenant; the ID, with
// the client, under SessionConfig.BindClient) and whose
// TTL is the idle timeout, renewed by every request of the session: an
// idle session's record expires in Redis by itself, and no key is ever
// left without a TTL. An error wraps [ErrUnavailable]; the middleware then
// refuses the request with 503 (fail closed).
type OwnerStore struct{ b base }

// NewOwnerStore returns an OwnerStore. An unusable cfg is an error whose
// text starts "redisstore: invalid config".
func NewOwnerStore(cfg Config) (*OwnerStore, error) {
	b, err := newBase(cfg, "owner:")
	if err != nil {
		return nil, err
	}
	return &OwnerStore{b: b}, nil
}

func (s *OwnerStore) key(kind, id string) string {
	return s.b.hashedKey(kind + "\x00" + id)
}

func ttlMillis(ttl time.Duration) (int64, error) {
	ms := ttl.Milliseconds()
	if ms < 1 {
		return 0, fmt.Errorf("%w: owner TTL %v is under 1ms", errConfig, ttl)
	}
	return ms, nil
}

// Claim implements middleware.OwnerStore: one Lua script (GET, SET PX).
// It returns the holder: owner, or the other owner that holds id.
func (s *OwnerStore) Claim(ctx context.Context, kind, id, owner string, ttl time.Duration) (string, error) {
	ms, err := ttlMillis(ttl)
	if err != nil {
		return "", err
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	holder, err := claimScript.Run(ctx, s.b.rdb, []string{s.key(kind, id)}, owner, ms).Text()
	if err != nil {
		return "", unavailable("owner claim", err)
	}
	return holder, nil
}

// Owner implements middleware.OwnerStore: one Lua script (GET, PEXPIRE).
func (s *OwnerStore) Owner(ctx context.Context, kind, id string, ttl time.Duration) (string, error) {
	ms, err := ttlMillis(ttl)
	if err != nil {
		return "", err
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	v, err := ownerScript.Run(ctx, s.b.rdb, []string{s.key(kind, id)}, ms).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", unavailable("owner get", err)
	}
	return v, nil
}

// Forget implements middleware.OwnerStore (DEL).
func (s *OwnerStore) Forget(ctx context.Context, kind, id string) error {
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	if err := s.b.rdb.Del(ctx, s.key(kind, id)).Err(); err != nil {
		return unavailable("owner forget", err)
	}
	return nil
}
