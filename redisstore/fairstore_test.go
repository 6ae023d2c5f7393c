package redisstore_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/redisstore"
)

// TestStepUpPartitionFlood: one client counting challenges for new
// principals at full speed for 10x the per-partition bound keeps at most
// the bound in Redis, every key with a TTL, and never disturbs another
// client's counter: alice's keeps counting, so her bound still holds and
// her reset still works. Before the partitions were bounded, the flood
// kept every counter it made.
func TestStepUpPartitionFlood(t *testing.T) {
	_, rdb := newRedis(t)
	s, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 100
	redisstore.SetPartitionKeys(s, bound)
	ctx := t.Context()
	alice := 0
	for i := range 10 * bound {
		if i%bound == bound/2 {
			alice++
			n, err := s.Incr(ctx, "alice-app", "alice\x00repo:admin", time.Minute, time.Time{})
			if err != nil || n != alice {
				t.Fatalf("alice's Incr after %d flood counters = %d, %v; want %d", i, n, err, alice)
			}
		}
		if n, err := s.Incr(ctx, "mallory-app", fmt.Sprint("bot-", i, "\x00repo:admin"), time.Minute, time.Time{}); err != nil || n != 1 {
			t.Fatalf("flood Incr %d = %d, %v; want 1", i, n, err)
		}
	}
	if err := s.Reset(ctx, "alice-app", "alice\x00repo:admin"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Incr(ctx, "alice-app", "alice\x00repo:admin", time.Minute, time.Time{}); err != nil || n != 1 {
		t.Fatalf("alice's Incr after Reset = %d, %v; want 1", n, err)
	}
	// The flood's counters and index, alice's counter and index.
	if keys := keysWithTTL(t, rdb); len(keys) > bound+3 {
		t.Fatalf("%d keys after flooding %d counters; want at most %d", len(keys), 10*bound, bound+3)
	}
}

// usedMemory returns Redis's used_memory.
func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// TestReplayPartitionFlood: one principal claiming fresh proofs at full
// speed for 10x the per-partition bound, on a Redis whose memory holds a
// few times the bound (maxmemory, noeviction: measured in this test, from
// what the first bound of claims cost), never causes the refusal of
// another principal's fresh proof, and no proof of the flood is accepted
// twice. Before the partitions were bounded, the flood filled Redis and
// every claim of every principal failed with OOM (fail closed: 401).
func TestReplayPartitionFlood(t *testing.T) {
	_, rdb := newRedis(t)
	s, err := redisstore.NewReplayStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 200
	redisstore.SetReplayPartitionKeys(s, bound)
	ctx := t.Context()
	claim := func(part, key string) (bool, error) { return s.Claim(ctx, part, key, 5*time.Minute) }
	before := usedMemory(t, rdb)
	for i := range bound {
		if fresh, err := claim("mallory", fmt.Sprint("flood-", i)); !fresh || err != nil {
			t.Fatalf("flood claim %d: %v, %v", i, fresh, err)
		}
	}
	perBound := max(usedMemory(t, rdb)-before, 1<<10)
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(usedMemory(t, rdb)+3*perBound, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("a bound of claims costs %d bytes; maxmemory is 3x that above the used memory", perBound)
	alice, floodRefused := 0, 0
	for i := bound; i < 10*bound; i++ {
		k := fmt.Sprint("flood-", i)
		if fresh, err := claim("mallory", k); !fresh || err != nil {
			floodRefused++ // the flooder loses only its older proofs: counted, checked below
		} else if fresh, err := claim("mallory", k); fresh || err != nil {
			t.Fatalf("replay of flood claim %d: %v, %v; want refused", i, fresh, err)
		}
		if i%20 == 0 {
			alice++
			if fresh, err := claim("alice", fmt.Sprint("alice-", i)); !fresh || err != nil {
				t.Fatalf("alice's proof after %d flood claims: %v, %v; want fresh", i+1, fresh, err)
			}
		}
	}
	if keys := keysWithTTL(t, rdb); len(keys) > 4 {
		t.Fatalf("%d keys, want each partition's set and floor", len(keys))
	}
	if alice != 9*bound/20 || floodRefused != 0 {
		t.Fatalf("alice claimed %d proofs; %d fresh flood proofs refused, want none", alice, floodRefused)
	}
}
