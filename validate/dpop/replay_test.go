package dpop

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestReplayEntryLifetime: with the default store, a used jti is kept
// exactly while its proof can still be accepted on the server's clock
// (iat + Window, inclusive), and not a minute more; a proof dated at the
// future end of the window keeps its entry 2 x Window. Before, every entry
// lived one minute longer (11 minutes for such a proof).
func TestReplayEntryLifetime(t *testing.T) {
	for _, off := range []time.Duration{-defaultWindow, 0, defaultWindow} {
		t.Run(off.String(), func(t *testing.T) {
			clock := now
			v := newTestVerifier(t, Config{Now: func() time.Time { return clock }})
			st := v.cfg.ReplayStore.(*memoryReplayStore)
			s := goodSpec(t)
			iat := now.Add(off)
			s.claims["iat"] = iat.Unix()
			proof := s.sign(t)
			if _, err := v.Verify(bg, goodRequest(t, proof)); err != nil {
				t.Fatal(err)
			}
			held := heldUntil(t, st)
			if want := iat.Add(defaultWindow).Add(time.Nanosecond); !held.Equal(want) {
				t.Fatalf("entry held until %v (%v after the claim), want %v (%v)", held, held.Sub(now), want, want.Sub(now))
			}
			clock = iat.Add(defaultWindow) // the last instant the proof is acceptable
			if _, err := v.Verify(bg, goodRequest(t, proof)); !errors.Is(err, errReplay) {
				t.Fatalf("replay at the end of the window: err = %v, want errReplay", err)
			}
		})
	}
}

// heldUntil returns the expiry of the only key st holds.
func heldUntil(t *testing.T, st *memoryReplayStore) time.Time {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.keys.Len() != 1 {
		t.Fatalf("store holds %d keys, want 1", st.keys.Len())
	}
	e := st.keys.Oldest()
	return e.Expires
}

// TestReplayMargin: a given store gets the default margin, or the one
// configured; a negative margin is refused.
func TestReplayMargin(t *testing.T) {
	for _, tt := range []struct {
		margin, want time.Duration
	}{{0, defaultReplayMargin}, {5 * time.Second, 5 * time.Second}} {
		var got time.Duration
		v := newTestVerifier(t, Config{ReplayMargin: tt.margin, ReplayStore: storeFunc(func(_ string, ttl time.Duration) (bool, error) { got = ttl; return true, nil })})
		if _, err := v.Verify(bg, goodRequest(t, goodSpec(t).sign(t))); err != nil {
			t.Fatal(err)
		}
		if want := defaultWindow + time.Nanosecond + tt.want; got != want {
			t.Errorf("margin %v: ttl = %v, want %v", tt.margin, got, want)
		}
	}
	if _, err := New(Config{ReplayMargin: -time.Second}); !errors.Is(err, ErrConfig) {
		t.Errorf("negative margin: err = %v, want ErrConfig", err)
	}
}

// TestMemoryReplayStoreFlood: one partition claiming fresh keys for 10x
// the bound never causes the refusal of another partition's fresh key,
// and no key of the flooder is ever accepted twice, though the store had
// to forget most of them early.
func TestMemoryReplayStoreFlood(t *testing.T) {
	const bound = 16
	clock := now
	s := NewMemoryReplayStore(bound, func() time.Time { return clock }).(*memoryReplayStore)
	var flood []string
	for i := range 10 * bound {
		clock = clock.Add(time.Second) // fresh proofs, each dated now
		k := fmt.Sprint("flood-", i)
		fresh, err := s.Claim(bg, "mallory", k, defaultWindow)
		if err != nil || !fresh {
			t.Fatalf("flood claim %d: %v, %v; want fresh (the flooder loses only its older proofs)", i, fresh, err)
		}
		flood = append(flood, k)
		if i%4 == 0 {
			if fresh, err := s.Claim(bg, "alice", fmt.Sprint("alice-", i), defaultWindow); !fresh || err != nil {
				t.Fatalf("alice after %d flood claims: %v, %v; want fresh", i+1, fresh, err)
			}
		}
		for j, k := range flood {
			if fresh, err := s.Claim(bg, "mallory", k, defaultWindow-clock.Sub(now)+time.Duration(j+1)*time.Second); fresh || err != nil {
				t.Fatalf("replay of flood key %d after %d claims: %v, %v; want refused", j, i+1, fresh, err)
			}
		}
	}
	if s.len() != bound {
		t.Errorf("Len = %d, want %d", s.len(), bound)
	}
}

// TestMemoryReplayStoreNeverForgets: under random claims of a few
// partitions into a small store (evictions, floors, expiry), a key is
// never reported fresh while an earlier claim of it is still live: the
// fair eviction never lets a replay through.
func TestMemoryReplayStoreNeverForgets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clock := now
	s := NewMemoryReplayStore(8, func() time.Time { return clock })
	live := map[string]time.Time{} // key: expiry of its accepted claim
	for i := range 5000 {
		clock = clock.Add(time.Duration(rng.IntN(3)) * time.Second)
		part := fmt.Sprint("p", rng.IntN(3))
		key := fmt.Sprint(part, "-k", rng.IntN(40))
		// A key's expiry is fixed by its proof (iat + window), whenever it is claimed.
		iat := now.Add(time.Duration(rng.IntN(4000)) * time.Second)
		if k, ok := live[key]; ok {
			iat = k.Add(-defaultWindow)
		}
		exp := iat.Add(defaultWindow)
		if !clock.Before(exp) {
			continue // the proof is no longer acceptable
		}
		fresh, err := s.Claim(bg, part, key, exp.Sub(clock))
		if err != nil {
			continue // errStoreFull refuses, which is safe
		}
		if e, ok := live[key]; ok && clock.Before(e) && fresh {
			t.Fatalf("claim %d: %s accepted twice within its lifetime", i, key)
		}
		if fresh {
			live[key] = exp
		}
	}
}
