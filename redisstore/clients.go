package redisstore

import (
	"context"
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
	b   base
	ttl time.Duration
	now func() time.Time
}

var _ cimd.Store = (*clientStore)(nil)

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
func NewClientStore(cfg Config) (cimd.Store, error) {
	b, err := newBase(cfg, "client:")
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
	return &clientStore{b: b, ttl: ttl, now: now}, nil
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
