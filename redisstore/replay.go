package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// replayPartitionKeys bounds the proofs one partition (the Verifier's
// Request.Partition: a token's principal, or the proof key) holds at
// once, about 100 bytes each in Redis: a client sending a fresh proof on
// every request keeps at most this many, whatever its rate. Beyond it,
// the partition's proof that expires first is forgotten early, and the
// partition's floor (that proof's expiry) refuses, as a possible replay,
// every later proof of the partition that would expire no later: only
// proofs older than those it already dropped, and only for the partition
// that filled its share. 10 000 is a proof every 30 ms throughout the
// default window.
const replayPartitionKeys = 10_000

// replayScript records ARGV[1] in the partition's sorted set KEYS[1], by
// expiry on Redis's clock (now + ARGV[2] ms), unless it is held already
// or would expire no later than the partition's floor KEYS[2]. Beyond
// ARGV[3] entries it first drops those that expire first and raises the
// floor to the last of them. The set's TTL is its latest expiry, the
// floor's the floor itself: nothing outlives the proofs it stands for.
// Both keys carry the partition's hash tag: one slot, Cluster-safe.
var replayScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local floor = tonumber(redis.call('GET', KEYS[2]) or '0')
if exp <= floor then
  return 0
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3]) + 1
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  local f = tonumber(old[#old])
  if f > floor and f > now then
    redis.call('SET', KEYS[2], old[#old], 'PXAT', f)
  end
end
redis.call('ZADD', KEYS[1], exp, ARGV[1])
if redis.call('PTTL', KEYS[1]) < exp - now then
  redis.call('PEXPIREAT', KEYS[1], exp)
end
return 1
`)

// replayStore is the replay cache of [NewReplayStore].
type replayStore struct {
	b       base
	maxKeys int
}

// NewReplayStore returns a replay cache in Redis, shared by replicas:
// the ReplayStore of validate/dpop (a proof's jti, or any other one-time
// value), which this package satisfies without importing it. It is safe
// for concurrent use. An unusable cfg is an error whose text starts
// "redisstore: invalid config".
//
// Claim records key in partition for ttl (rounded up to the millisecond)
// and reports fresh=true only to the first caller, across every replica,
// in one round trip (a Lua script over the partition's sorted set and
// floor). It fails closed: on any error (Redis down or out of memory,
// timeout, ttl under 1 ms) it returns fresh=false and an error wrapping
// [ErrUnavailable] (or "redisstore: invalid config"), and the proof must
// be refused.
//
// Each partition (the Verifier's Request.Partition: a token's principal,
// or the proof key) holds at most 10 000 entries, about 100 bytes each,
// so one principal flooding fresh proofs cannot fill Redis for the
// others: 10 000 is a proof every 30 ms throughout the default window.
// Beyond it, the partition's proof that expires first is forgotten early,
// and the partition's floor (that proof's expiry) refuses, as a possible
// replay, every later proof of the partition that would expire no later:
// only proofs older than those it already dropped, and only for the
// partition that filled its share. An entry lives exactly its ttl (which
// the Verifier measures on the server's clock: until the proof could no
// longer be accepted).
func NewReplayStore(cfg Config) (interface {
	Claim(ctx context.Context, partition, key string, ttl time.Duration) (fresh bool, err error)
}, error) {
	b, err := newBase(cfg, "replay:")
	if err != nil {
		return nil, err
	}
	return &replayStore{b: b, maxKeys: replayPartitionKeys}, nil
}

// Claim implements validate/dpop's ReplayStore (see NewReplayStore).
func (s *replayStore) Claim(ctx context.Context, partition, key string, ttl time.Duration) (fresh bool, err error) {
	if ttl.Milliseconds() < 1 {
		return false, fmt.Errorf("%w: replay ttl %v is under 1ms", errConfig, ttl)
	}
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	set := s.b.prefix + "{" + s.b.hashedKey(partition)[len(s.b.prefix):] + "}"
	member := s.b.hashedKey(key)[len(s.b.prefix):]
	n, err := replayScript.Run(ctx, s.b.rdb, []string{set, set + "floor"}, member, int64(ms), s.maxKeys).Int()
	if err != nil {
		return false, unavailable("replay claim", err)
	}
	return n == 1, nil
}
