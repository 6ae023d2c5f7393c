package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/internal/redistest"
)

// testTimeout bounds each Redis operation in the tests that are not about
// timeouts: the stores' 250 ms default is for production, and one command
// can take longer under -race on two shared cores (TestSessionsSurviveRestart
// once answered 503 at load average 17 on it). An outage test stops the
// server, which fails a command at once, whatever the timeout.
const testTimeout = 10 * time.Second

// newRedis starts a real redis-server and returns a client for it, closed
// at cleanup.
func newRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{
		Addr:        srv.Addr,
		DialTimeout: testTimeout,
		ReadTimeout: testTimeout,
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
