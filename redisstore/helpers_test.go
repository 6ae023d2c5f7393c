package redisstore_test

import (
	"context"
	"slices"
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

// awaitExpiry runs create, which must add exactly one key, checks that
// Redis gave that key a TTL of at most ttl, and waits until Redis has
// expired it by its own clock: the test waits on the key's state, not on a
// sleep guessed to outlast the TTL.
func awaitExpiry(t *testing.T, rdb *redis.Client, ttl time.Duration, create func()) {
	t.Helper()
	ctx := context.Background()
	before, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	create()
	after, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	after = slices.DeleteFunc(after, func(k string) bool { return slices.Contains(before, k) })
	if len(after) != 1 {
		t.Fatalf("new keys = %q, want one", after)
	}
	key := after[0]
	// PTTL -2: already expired (a loaded machine may get here late).
	if got := rdb.PTTL(ctx, key).Val(); got > ttl || got == -1 {
		t.Fatalf("PTTL(%q) = %v, want at most %v", key, got, ttl)
	}
	for deadline := time.Now().Add(testTimeout); rdb.Exists(ctx, key).Val() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("key %q still exists %v after it was set with TTL %v", key, testTimeout, ttl)
		}
	}
}

// awaitMemberExpiry runs create, which must add exactly one member to
// the sorted set key, scored by its expiry in Unix ms on Redis's clock;
// it checks that the expiry is at most ttl ahead of Redis's TIME and waits
// until Redis's clock has reached it (no sleep guessed to outlast it).
func awaitMemberExpiry(t *testing.T, rdb *redis.Client, key string, ttl time.Duration, create func()) {
	t.Helper()
	ctx := context.Background()
	before := rdb.ZRange(ctx, key, 0, -1).Val()
	create()
	added := slices.DeleteFunc(rdb.ZRangeWithScores(ctx, key, 0, -1).Val(), func(z redis.Z) bool {
		return slices.Contains(before, z.Member.(string))
	})
	if len(added) != 1 {
		t.Fatalf("new members of %q = %v, want one", key, added)
	}
	exp := time.UnixMilli(int64(added[0].Score))
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.Sub(now); d > ttl {
		t.Fatalf("member expires %v after Redis's TIME, want at most %v", d, ttl)
	}
	for deadline := time.Now().Add(testTimeout); now.Before(exp); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Redis's TIME %v still before the expiry %v after %v", now, exp, testTimeout)
		}
		if now, err = rdb.Time(ctx).Result(); err != nil {
			t.Fatal(err)
		}
	}
}
