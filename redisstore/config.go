package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for the zero values of [Config], and its bounds.
const (
	// defaultPrefix starts every key.
	defaultPrefix = "mcpguard:"
	// defaultTimeout bounds one Redis operation.
	defaultTimeout = 250 * time.Millisecond
	// maxPrefixBytes bounds Config.Prefix.
	maxPrefixBytes = 64
	// maxRawKeyBytes is the longest client_id used verbatim in a key.
	maxRawKeyBytes = 128
)

// Config is what every store of this package needs.
type Config struct {
	// Client is the Redis connection: a *redis.Client, *redis.ClusterClient,
	// *redis.Ring or a redis.NewUniversalClient. Required. The caller owns
	// it and closes it.
	Client redis.UniversalClient
	// Prefix starts every key, to share one Redis between applications or
	// environments ("prod:mcpguard:"). Empty means "mcpguard:"; at most 64
	// bytes. On Redis Cluster a prefix may carry a hash
	// tag ("{mcpguard}:") to keep every key of this package in one slot;
	// no operation of this package needs that (each touches one key, or
	// the keys of one partition, which carry their own hash tag).
	Prefix string
	// Timeout bounds each operation, within the caller's context. Zero
	// means 250 ms; negative is a configuration error.
	Timeout time.Duration
	// ClientTTL is how long [NewClientStore]'s store keeps a registration
	// after its last Put; it is the Redis counterpart of
	// boltstore.Store.Prune, so no registration is kept for ever
	// (registration is unauthenticated).
	// A client whose secret expires sooner is kept until then. Zero means
	// 90 days; negative is a configuration error. The other stores ignore
	// it.
	ClientTTL time.Duration
	// Now is [NewClientStore]'s clock for SecretExpiresAt. Nil means
	// time.Now. The other stores ignore it (they take the time from their
	// caller or from Redis).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	return c
}

func (c Config) check() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is required", errConfig)
	}
	if rv := reflect.ValueOf(c.Client); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fmt.Errorf("%w: Client is nil", errConfig)
	}
	if len(c.Prefix) > maxPrefixBytes {
		return fmt.Errorf("%w: Prefix longer than %d bytes", errConfig, maxPrefixBytes)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: negative Timeout", errConfig)
	}
	return nil
}

// base is the part every store shares.
type base struct {
	rdb     redis.UniversalClient
	prefix  string // Config.Prefix + store name
	timeout time.Duration
}

func newBase(cfg Config, store string) (base, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return base{}, err
	}
	return base{rdb: cfg.Client, prefix: cfg.Prefix + store, timeout: cfg.Timeout}, nil
}

// hashedKey returns the key for k: the prefix and the base64url SHA-256
// of k (43 bytes), so keys are bounded and hold no subject or token.
func (b *base) hashedKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return b.prefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

// readableKey returns the key for k: k itself when it is short printable
// ASCII without '~' (the marker of hashed keys), its hash otherwise.
func (b *base) readableKey(k string) string {
	if len(k) == 0 || len(k) > maxRawKeyBytes {
		return b.prefix + "~" + b.hashedKey(k)[len(b.prefix):]
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= 0x20 || c > 0x7e || c == '~' {
			return b.prefix + "~" + b.hashedKey(k)[len(b.prefix):]
		}
	}
	return b.prefix + k
}

// ctx returns ctx bounded by the operation timeout.
func (b *base) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.timeout)
}

// unavailable wraps a go-redis error.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
