package validate

import (
	"context"
	"crypto"
	"github.com/mcpguard/mcpguard/internal/jws"
	"hash/maphash"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// Cache keys are 64-bit maphash values of the end of the token's signature
// segment under a random per-Validator seed, and each entry keeps the raw token it was verified
// from; a hit requires the stored token to equal the presented one, so a
// hash collision can only cost a miss, never return another token's claims.
// maphash was chosen over SHA-256 by measurement: on the reference machine
// SHA-256 of a 600-byte token took about 0.7µs, more than half the cached
// budget for RS256, against about 0.1µs for maphash.String. The price is
// that cached tokens stay in memory until evicted (at most CacheSize of
// them, each at most MaxTokenBytes long).
type cacheKey = uint64

// cacheEntry is immutable once added, so it is read outside the lock.
type cacheEntry struct {
	key    cacheKey
	raw    string  // the token this entry was verified from
	claims *Claims // private copy; callers get clones
	issuer *issuerState
	alg    *jws.Alg
	kid    string // "kid" header as sent (empty when the token has none)
	pub    crypto.PublicKey
}

// tokenCache is a bounded, sharded cache of verified tokens, shared fairly
// between principals. Each shard is a mutex-protected [fairlru.Cache]
// partitioned by principal (issuer, subject, client): when a shard is full,
// the principal holding the most of its entries loses its least recently
// used one, so a principal presenting endless fresh tokens evicts only its
// own and never another principal's cached token. Sharding by the key's low
// bits keeps parallel validations of different tokens off one lock.
// Recency is CLOCK's approximation (a hit sets a flag), per shard.
type tokenCache struct {
	seed   maphash.Seed
	shards []cacheShard
	mask   uint64
}

type cacheShard struct {
	mu  sync.Mutex
	cap int
	c   *fairlru.Cache[cacheKey, *cacheEntry]
}

// minShardEntries keeps small caches in one shard, so that a cache of n
// entries evicts exactly within n.
const minShardEntries = 256

func newTokenCache(size int) *tokenCache {
	n := 1
	for n < 16 && size/(n*2) >= minShardEntries {
		n *= 2
	}
	c := &tokenCache{seed: maphash.MakeSeed(), shards: make([]cacheShard, n), mask: uint64(n - 1)}
	for i := range c.shards {
		c.shards[i].cap = size / n
		c.shards[i].c = fairlru.New[cacheKey, *cacheEntry](fairlru.Config{MaxEntries: size / n})
	}
	return c
}

// keyOf hashes the last keyBytes bytes of raw, which lie in the signature
// segment of any real token: a signature is unique to its token, and
// hashing a fixed suffix rather than the whole token keeps a hit on a
// 4 KiB token as cheap as on a small one. get still requires the whole
// stored token to equal raw, so two tokens with one suffix (at most one of
// which can verify, and only verified tokens are added) only share a slot,
// never claims.
func (c *tokenCache) keyOf(raw string) cacheKey {
	return maphash.String(c.seed, raw[max(0, len(raw)-keyBytes):])
}

// keyBytes is the length of the token suffix keyOf hashes: 64 base64url
// characters, 384 bits of signature (an ES256 signature has 86).
const keyBytes = 64

func (c *tokenCache) shard(k cacheKey) *cacheShard { return &c.shards[k&c.mask] }

// get returns the entry for raw, whose key is k, and marks it used.
func (c *tokenCache) get(k cacheKey, raw string) *cacheEntry {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.c.Get(k, time.Time{})
	if el == nil || el.Value.raw != raw {
		return nil
	}
	return el.Value
}

// add inserts e in its principal's partition, evicting the least recently
// used entry of the shard's largest partition when the shard is full.
func (c *tokenCache) add(e *cacheEntry) {
	part := e.claims.Issuer + "\x00" + e.claims.Subject + "\x00" + e.claims.ClientID
	s := c.shard(e.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.Add(part, e.key, e, time.Time{}, time.Time{})
}

// remove deletes the entry for e.key if it is still e.
func (c *tokenCache) remove(e *cacheEntry) {
	s := c.shard(e.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.c.Peek(e.key, time.Time{}); el != nil && el.Value == e {
		s.c.Remove(e.key)
	}
}

// len returns the number of cached entries.
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.c.Len()
		s.mu.Unlock()
	}
	return n
}

// fromCache answers Validate from the cache. It reports done=false on a
// miss, or when the entry was dropped because the issuer re-keyed under its
// kid (the caller then validates in full, and its key-source call is
// answered from the fresh set). A hit re-checks exp, nbf, iat and lifetime
// against now, and asks the issuer's KeySource once whether the verifying
// key is still published under the token's kid; if the kid is gone, or the
// source fails, the entry is evicted and that error returned, so a request
// never waits on the key source twice. Entries that fail are evicted, so
// none is served after its token expired.
func (v *Validator) fromCache(ctx context.Context, k cacheKey, raw string, now time.Time) (c *Claims, done bool, err error) {
	e := v.cache.get(k, raw)
	if e == nil {
		return nil, false, nil
	}
	if err := v.checkTimes(e.claims, now); err != nil {
		v.cache.remove(e)
		return nil, true, err
	}
	published, err := stillPublished(ctx, e)
	if err != nil {
		v.cache.remove(e)
		return nil, true, err
	}
	if !published {
		v.cache.remove(e)
		return nil, false, nil
	}
	return e.claims.clone(), true, nil
}

// stillPublished reports whether e's verifying key is still among the
// usable keys the issuer publishes under e's kid. A key-source error is
// mapped as tryKeys maps it.
func stillPublished(ctx context.Context, e *cacheEntry) (bool, error) {
	keys, err := e.issuer.keys.Keys(ctx, e.kid)
	if err != nil {
		return false, keySourceErr(err)
	}
	for i := range keys {
		if pub, ok := jws.UsableKey(&keys[i], e.alg, e.kid); ok && jws.SameKey(pub, e.pub) {
			return true, nil
		}
	}
	return false, nil
}
