package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/redistest"
)

// newRedis starts a real redis-server and returns a client for it, closed
// at cleanup.
func newRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{
		Addr:        srv.Addr,
		DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond,
		MaxRetries:  -1, // tests of outages want the first error
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return srv, rdb
}

// keysWithTTL lists every key and checks each has a TTL (PTTL > 0).
func keysWithTTL(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 {
			t.Errorf("key %q has PTTL %v; every key needs a TTL", k, ttl)
		}
	}
	return keys
}
