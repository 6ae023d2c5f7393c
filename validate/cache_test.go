package validate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func cachedValidator(t *testing.T, src KeySource, clk *clock, size int) *Validator {
	t.Helper()
	return newTestValidator(t, func(c *Config) {
		c.Issuers[0].Keys = src
		c.Now = clk.now
		c.CacheSize = size
	})
}

// cached reports whether tok is in v's cache, without touching recency.
func cached(v *Validator, tok string) bool {
	k := v.cache.keyOf(tok)
	s := v.cache.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.c.Peek(k, time.Time{})
	return el != nil && el.Value.raw == tok
}

func TestCacheHit(t *testing.T) {
	k := keys(t)
	clk := &clock{t: testNow}
	v := cachedValidator(t, k.primarySet(), clk, 8)
	tok := mint(t, k.es256, baseClaims())
	c1, err := v.Validate(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !cached(v, tok) {
		t.Fatal("token not cached after success")
	}
	// Callers own what they get: mutating it must not reach the cache.
	c1.Subject = "mallory"
	c1.Audience[0] = "https://evil.example"
	c1.Scopes[0] = "admin"
	c2, err := v.Validate(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c1 || c2.Subject != "alice" || c2.Audience[0] != testAud || c2.Scopes[0] != "tools:read" || c2.HasScope("admin") {
		t.Errorf("cache hit: got %+v, want a fresh unmodified copy", *c2)
	}
	var extra map[string]any
	if err := c2.Decode(&extra); err != nil || extra["sub"] != "alice" {
		t.Errorf("Decode on cached claims: got %v, %v", extra, err)
	}
}

func TestCacheExpiresOnHit(t *testing.T) {
	k := keys(t)
	clk := &clock{t: testNow}
	v := cachedValidator(t, k.primarySet(), clk, 8)
	tok := mint(t, k.es256, with("exp", at(time.Minute)))
	if _, err := v.Validate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	clk.set(testNow.Add(time.Minute + defaultLeeway - time.Second))
	if _, err := v.Validate(t.Context(), tok); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	clk.set(testNow.Add(time.Minute + defaultLeeway))
	if _, err := v.Validate(t.Context(), tok); !errors.Is(err, errExpired) {
		t.Fatalf("after exp: got err %v, want errExpired", err)
	}
	if cached(v, tok) {
		t.Error("expired entry not evicted")
	}
	// Time moving backwards is re-checked too.
	tok2 := mint(t, k.es256, with("nbf", at(0), "iat", at(0)))
	clk.set(testNow)
	if _, err := v.Validate(t.Context(), tok2); err != nil {
		t.Fatal(err)
	}
	clk.set(testNow.Add(-time.Hour))
	if _, err := v.Validate(t.Context(), tok2); !errors.Is(err, errNotYetValid) {
		t.Fatalf("clock moved back: got err %v, want errNotYetValid", err)
	}
}

func TestCacheKeyRemoved(t *testing.T) {
	k := keys(t)
	tests := []struct {
		name    string
		after   []jose.JSONWebKey
		wantErr error
	}{
		{"key removed", []jose.JSONWebKey{k.rs256.jwk()}, errKeyNotFound},
		{"kid re-keyed", []jose.JSONWebKey{{Key: k.es256b.priv.Public(), KeyID: "es256"}}, errSignature},
		{"marked enc", []jose.JSONWebKey{{Key: k.es256.priv.Public(), KeyID: "es256", Use: "enc"}}, errKeyNotFound},
		{"same key re-fetched", []jose.JSONWebKey{{Key: clonePub(t, k.es256), KeyID: "es256"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &StaticKeys{Set: []jose.JSONWebKey{k.es256.jwk()}}
			v := cachedValidator(t, src, &clock{t: testNow}, 8)
			tok := mint(t, k.es256, baseClaims())
			if _, err := v.Validate(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
			src.Set = tt.after
			if _, err := v.Validate(t.Context(), tok); !errors.Is(err, tt.wantErr) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if got, want := cached(v, tok), tt.wantErr == nil; got != want {
				t.Errorf("cached: got %v, want %v", got, want)
			}
		})
	}
}

func clonePub(t *testing.T, k *testKey) any {
	t.Helper()
	j := k.jwk()
	b, err := j.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out jose.JSONWebKey
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return out.Key
}

func TestCacheFailureNotCached(t *testing.T) {
	k := keys(t)
	clk := &clock{t: testNow}
	v := cachedValidator(t, k.primarySet(), clk, 8)
	for _, tok := range []string{
		mint(t, k.es256, with("aud", "https://other.example")),
		mint(t, k.es256, with("nbf", at(time.Hour))),
		mint(t, k.es256b, baseClaims()),
		"garbage",
	} {
		if _, err := v.Validate(t.Context(), tok); err == nil {
			t.Fatal("want an error")
		}
	}
	if n := v.cache.len(); n != 0 {
		t.Errorf("cache len: got %d, want 0", n)
	}
	// A token that is not yet valid becomes valid later, and only then is cached.
	tok := mint(t, k.es256, with("nbf", at(time.Hour)))
	clk.set(testNow.Add(time.Hour))
	if _, err := v.Validate(t.Context(), tok); err != nil || !cached(v, tok) {
		t.Errorf("later: got err %v, cached %v", err, cached(v, tok))
	}
}

func TestCacheLRUBound(t *testing.T) {
	k := keys(t)
	v := cachedValidator(t, k.primarySet(), &clock{t: testNow}, 3)
	toks := make([]string, 5)
	for i := range toks {
		toks[i] = mint(t, k.es256, with("jti", fmt.Sprint(i)))
	}
	validate := func(tok string) {
		t.Helper()
		if _, err := v.Validate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	validate(toks[0])
	validate(toks[1])
	validate(toks[2])
	validate(toks[0]) // 0 is now most recent; 1 is least recent
	validate(toks[3]) // evicts 1
	if cached(v, toks[1]) || !cached(v, toks[0]) || !cached(v, toks[2]) || !cached(v, toks[3]) {
		t.Errorf("after 4: got cached 0..3 = %v %v %v %v, want true false true true",
			cached(v, toks[0]), cached(v, toks[1]), cached(v, toks[2]), cached(v, toks[3]))
	}
	validate(toks[4]) // evicts 2
	if cached(v, toks[2]) || v.cache.len() != 3 {
		t.Errorf("after 5: got len %d, token 2 cached %v; want 3, false", v.cache.len(), cached(v, toks[2]))
	}
}

func TestCacheSizing(t *testing.T) {
	for _, size := range []int{1, 3, 255, 256, 511, 512, 1000, defaultCacheSize, 100000} {
		c := newTokenCache(size)
		total := 0
		for i := range c.shards {
			total += c.shards[i].cap
			if c.shards[i].cap < 1 {
				t.Errorf("size %d: shard %d has capacity %d", size, i, c.shards[i].cap)
			}
		}
		if total > size || total < size-len(c.shards) {
			t.Errorf("size %d: total capacity %d over %d shards", size, total, len(c.shards))
		}
	}
	v := newTestValidator(t, func(c *Config) { c.CacheSize = -1 })
	if v.cache != nil {
		t.Error("negative CacheSize: cache enabled")
	}
	v = newTestValidator(t, func(c *Config) { c.CacheSize = 0 })
	if v.cache == nil || len(v.cache.shards) != 16 {
		t.Error("zero CacheSize: want the default sharded cache")
	}
}

func TestCacheBoundManyTokens(t *testing.T) {
	k := keys(t)
	v := cachedValidator(t, k.primarySet(), &clock{t: testNow}, 300)
	for i := range 1000 {
		if _, err := v.Validate(t.Context(), mint(t, k.ed, with("jti", fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.cache.len(); n > 300 {
		t.Errorf("cache len: got %d, want <= 300", n)
	}
}

func TestCacheConcurrent(t *testing.T) {
	k := keys(t)
	clk := &clock{t: testNow}
	src := &StaticKeys{Set: []jose.JSONWebKey{k.es256.jwk(), k.ed.jwk()}}
	v := cachedValidator(t, src, clk, 4)
	toks := []string{
		mint(t, k.es256, baseClaims()), mint(t, k.ed, baseClaims()),
		mint(t, k.es256, with("jti", "2")), mint(t, k.ed, with("jti", "3")),
		mint(t, k.es256, with("jti", "4")), mint(t, k.ed, with("jti", "5")),
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c, err := v.Validate(context.Background(), toks[(g+i)%len(toks)])
				if err != nil {
					t.Error(err)
					return
				}
				c.Scopes[0] = "mutated"
			}
		})
	}
	wg.Wait()
}

// TestCacheCollision checks that an entry is returned only for the exact
// token it was verified from, even if two tokens share a hash key.
func TestCacheCollision(t *testing.T) {
	c := newTokenCache(4)
	k := c.keyOf("token-a")
	c.add(&cacheEntry{key: k, raw: "token-b", claims: &Claims{}})
	if e := c.get(k, "token-a"); e != nil {
		t.Fatal("got an entry for a different token with the same key")
	}
	if e := c.get(k, "token-b"); e == nil {
		t.Fatal("lost the entry")
	}
}

// TestClaimsCloneIsolated: a copy shares no memory with the original or
// with another copy, whether its slices fit in the copy's own allocation
// (at most eight strings) or not; appending to Audience never reaches
// Scopes.
func TestClaimsCloneIsolated(t *testing.T) {
	for _, n := range []int{0, 1, 4, 7, 8, 9, 40} {
		c := &Claims{Subject: "alice", Audience: []string{"aud"}, Confirmation: &Confirmation{JKT: "k"}}
		for i := range n {
			c.Scopes = append(c.Scopes, fmt.Sprint("s", i))
		}
		if n == 0 {
			c.Scopes = nil
		}
		want := *c
		wantScopes := slices.Clone(c.Scopes)
		d1, d2 := c.clone(), c.clone()
		d1.Audience = append(d1.Audience, "extra")
		d1.Audience[0] = "evil"
		for i := range d1.Scopes {
			d1.Scopes[i] = "admin"
		}
		d1.Confirmation.JKT = "other"
		if c.Audience[0] != "aud" || !slices.Equal(c.Scopes, wantScopes) || c.Confirmation.JKT != "k" || c.Subject != want.Subject {
			t.Errorf("%d scopes: the original changed: %+v", n, c)
		}
		if d2.Audience[0] != "aud" || len(d2.Audience) != 1 || !slices.Equal(d2.Scopes, wantScopes) || d2.Confirmation.JKT != "k" {
			t.Errorf("%d scopes: another copy changed: %+v", n, d2)
		}
		if (c.Scopes == nil) != (d2.Scopes == nil) {
			t.Errorf("%d scopes: nil-ness of Scopes not kept", n)
		}
	}
}
