package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/clientrecord"
)

// defaultClientTTL is how long a registration is kept when
// Config.ClientTTL is zero.
const defaultClientTTL = 90 * 24 * time.Hour

// clientStore is the cimd.Store of [NewClientStore].
type clientStore struct {
	b     base
	quota base // the DCR network quota's keys
	ttl   time.Duration
	now   func() time.Time
}

var (
	_ cimd.Store        = (*clientStore)(nil)
	_ cimd.NetworkQuota = (*clientStore)(nil)
)

// NewClientStore returns a cimd.Store in Redis: registrations made on one
// replica are known to every replica. Records are the clients' JSON, not
// HTML-escaped (secret hashes, never secrets), each at most 32 KiB, under
// a key with a TTL (see [Config.ClientTTL]). It is safe for concurrent
// use. An unusable cfg is an error whose text starts "redisstore: invalid
// config".
//
// Put is SET with the TTL. A record over 32 KiB is refused with an error
// wrapping cimd.ErrRecordTooLarge, a client whose secret has already
// expired with "redisstore: invalid config". Get of an absent client is an
// error wrapping cimd.ErrUnknownClient, of a record that is not a client
// "redisstore: corrupt value". Redis failures of either wrap
// [ErrUnavailable] (and never cimd.ErrUnknownClient).
//
// The store is also a cimd.NetworkQuota, which a cimd.DCRHandler over it
// uses: the registrations per network (DCRConfig.NetworkClients) are
// counted in Redis, so replicas share one quota instead of each allowing
// it. Each network's count is one sorted set of at most NetworkClients
// registration times (key: the prefix, "dcrquota:" and the SHA-256 of the
// network), whose TTL is the window, updated in one Lua script; its
// times are the handlers' clocks. With Redis down, Take fails and the
// handler refuses registration with 503 (fail closed).
func NewClientStore(cfg Config) (cimd.Store, error) {
	b, err := newBase(cfg, "client:")
	if err != nil {
		return nil, err
	}
	q, err := newBase(cfg, "dcrquota:")
	if err != nil {
		return nil, err
	}
	ttl, now := cfg.ClientTTL, cfg.Now
	switch {
	case ttl < 0:
		return nil, fmt.Errorf("%w: negative ClientTTL", errConfig)
	case ttl == 0:
		ttl = defaultClientTTL
	}
	if now == nil {
		now = time.Now
	}
	return &clientStore{b: b, quota: q, ttl: ttl, now: now}, nil
}

// Put implements cimd.Store (see NewClientStore).
func (s *clientStore) Put(ctx context.Context, c *cimd.Client) error {
	v, err := clientrecord.Marshal(c)
	if err != nil {
		return fmt.Errorf("redisstore: encode client: %w", err)
	}
	if len(v) > clientrecord.MaxBytes {
		return fmt.Errorf("redisstore: %w: %d bytes, the cap is %d", cimd.ErrRecordTooLarge, len(v), clientrecord.MaxBytes)
	}
	ttl := s.ttl
	if !c.SecretExpiresAt.IsZero() {
		left := c.SecretExpiresAt.Sub(s.now())
		if left < time.Millisecond {
			return fmt.Errorf("%w: client secret already expired", errConfig)
		}
		ttl = min(ttl, left)
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	if err := s.b.rdb.Set(ctx, s.b.readableKey(c.ClientID), v, ttl).Err(); err != nil {
		return unavailable("client put", err)
	}
	return nil
}

// Get implements cimd.Store (see NewClientStore).
func (s *clientStore) Get(ctx context.Context, id string) (*cimd.Client, error) {
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	v, err := s.b.rdb.Get(ctx, s.b.readableKey(id)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, fmt.Errorf("%w: not in store", cimd.ErrUnknownClient)
	case err != nil:
		return nil, unavailable("client get", err)
	case len(v) > clientrecord.MaxBytes:
		return nil, fmt.Errorf("%w: record of %d bytes", errCorrupt, len(v))
	}
	c := new(cimd.Client)
	if err := clientrecord.Unmarshal(v, c); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	if c.ClientID != id {
		return nil, fmt.Errorf("%w: record of another client", errCorrupt)
	}
	return c, nil
}

// quotaTakeScript counts a registration (member ARGV[4]) of the network
// whose sorted set of registration times is KEYS[1], at ARGV[1] ms,
// unless the set holds ARGV[3] registrations younger than the window
// (ARGV[2] ms); then it returns {0, ms until the oldest leaves it}. The
// set's TTL is the window after its latest registration.
var quotaTakeScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local old = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(old[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
if redis.call('PTTL', KEYS[1]) < window then
  redis.call('PEXPIRE', KEYS[1], window)
end
return {1, 0}
`)

// quotaGiveScript removes one registration taken at ARGV[1] ms from
// KEYS[1].
var quotaGiveScript = redis.NewScript(`
local m = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'LIMIT', 0, 1)
if m[1] then
  redis.call('ZREM', KEYS[1], m[1])
end
return 0
`)

// Take implements cimd.NetworkQuota (see NewClientStore).
func (s *clientStore) Take(ctx context.Context, network string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	if limit < 1 {
		return false, window, nil
	}
	window = max(window, time.Millisecond)
	member := make([]byte, 12)
	_, _ = rand.Read(member)
	ctx, cancel := s.quota.ctx(ctx)
	defer cancel()
	res, err := quotaTakeScript.Run(ctx, s.quota.rdb, []string{s.quota.hashedKey(network)},
		now.UnixMilli(), window.Milliseconds(), limit, base64.RawURLEncoding.EncodeToString(member)).Int64Slice()
	if err != nil {
		return false, 0, unavailable("dcr quota take", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("%w: dcr quota answer of %d values", errCorrupt, len(res))
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// Give implements cimd.NetworkQuota (see NewClientStore).
func (s *clientStore) Give(ctx context.Context, network string, now time.Time) error {
	ctx, cancel := s.quota.ctx(ctx)
	defer cancel()
	if err := quotaGiveScript.Run(ctx, s.quota.rdb, []string{s.quota.hashedKey(network)}, now.UnixMilli()).Err(); err != nil {
		return unavailable("dcr quota give", err)
	}
	return nil
}
