package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/redisstore"
)

// replayStore is validate/dpop's ReplayStore, restated so that this test
// does not import validate/dpop.
type replayStore interface {
	Claim(ctx context.Context, partition, key string, ttl time.Duration) (fresh bool, err error)
}

// NewReplayStore's result is one.
var _ replayStore = func() replayStore { s, _ := redisstore.NewReplayStore(redisstore.Config{}); return s }()

func TestReplayClaim(t *testing.T) {
	_, rdb := newRedis(t)
	a, err := redisstore.NewReplayStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := redisstore.NewReplayStore(redisstore.Config{Client: rdb, Timeout: testTimeout}) // another replica
	ctx := t.Context()
	jti := strings.Repeat("j", 4096) // long keys are hashed
	if fresh, err := a.Claim(ctx, "p", jti, time.Minute); !fresh || err != nil {
		t.Fatalf("first Claim = %v, %v; want true", fresh, err)
	}
	if fresh, err := b.Claim(ctx, "p", jti, time.Minute); fresh || err != nil {
		t.Fatalf("replayed Claim on another replica = %v, %v; want false, nil", fresh, err)
	}
	keys := keysWithTTL(t, rdb)
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "mcpguard:replay:{") || len(keys[0]) != len("mcpguard:replay:{}")+43 {
		t.Errorf("keys = %q", keys)
	}
	if fresh, err := a.Claim(ctx, "p", "x", 0); fresh || !errors.Is(err, redisstore.ErrConfig) {
		t.Errorf("Claim(ttl 0) = %v, %v; want false, ErrConfig", fresh, err)
	}

	// Concurrent claims of one key: exactly one is fresh.
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			ok, err := s.Claim(context.Background(), "p", "race", time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Errorf("%d fresh claims of one key, want 1", fresh.Load())
	}

	// The claim expires with its ttl.
	awaitMemberExpiry(t, rdb, keys[0], 30*time.Millisecond, func() {
		if ok, _ := a.Claim(ctx, "p", "short", 30*time.Millisecond); !ok {
			t.Fatal("Claim(short) not fresh")
		}
	})
	if ok, err := a.Claim(ctx, "p", "short", 30*time.Millisecond); !ok || err != nil {
		t.Errorf("Claim after ttl = %v, %v; want fresh", ok, err)
	}
}
