package introspect

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
	"github.com/mcpguard/mcpguard/validate"
)

// cacheKey is the SHA-256 of a raw token. The token itself is never
// stored, so a heap dump of the cache yields no usable credential.
// SHA-256 is collision resistant, so equal keys mean equal tokens.
type cacheKey = [sha256.Size]byte

// entry is one cached result; immutable once added.
type entry struct {
	key    cacheKey
	claims *validate.Claims // nil: the token was reported inactive
	until  time.Time        // the entry is not used at or after until
}

// resultCache is a bounded cache of introspection results, guarded by one
// mutex and shared fairly between principals ([fairlru]): active results
// are partitioned by principal (issuer, subject, client) and every
// inactive result shares one partition, so neither a principal presenting
// endless fresh tokens nor a flood of junk tokens (with InactiveCacheTTL
// set) evicts another principal's cached result. A lookup costs a map
// access and a flag write, well below the cost of hashing the token.
type resultCache struct {
	mu sync.Mutex
	c  *fairlru.Cache[cacheKey, *entry]
}

// inactivePartition is the partition of every inactive result: no
// principal can be named for a token the server called inactive.
const inactivePartition = "\x00inactive"

func newResultCache(size int) *resultCache {
	return &resultCache{c: fairlru.New[cacheKey, *entry](fairlru.Config{MaxEntries: size})}
}

// get returns the live entry for k, marking it used. An entry whose until
// has passed is removed and not returned.
func (c *resultCache) get(k cacheKey, now time.Time) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.c.Get(k, now); el != nil {
		return el.Value
	}
	return nil
}

// add inserts or replaces the entry for e.key in its partition, evicting
// the least recently used entry of the largest partition when full.
func (c *resultCache) add(e *entry, now time.Time) {
	part := inactivePartition
	if e.claims != nil {
		part = e.claims.Issuer + "\x00" + e.claims.Subject + "\x00" + e.claims.ClientID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Add(part, e.key, e, e.until, now)
}

// remove deletes the entry for e.key if it is still e.
func (c *resultCache) remove(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.c.Peek(e.key, time.Time{}); el != nil && el.Value == e {
		c.c.Remove(e.key)
	}
}

// store caches the result of one introspection made at now: an active
// token's claims until its exp or now+MaxCacheTTL, whichever is first, or
// an inactive result for InactiveCacheTTL when that is positive. Results
// that would expire at once are not stored.
func (i *Introspector) store(k cacheKey, c *validate.Claims, now time.Time) {
	if i.cache == nil {
		return
	}
	e := &entry{key: k, claims: c}
	if c == nil {
		if i.cfg.InactiveCacheTTL <= 0 {
			return
		}
		e.until = now.Add(i.cfg.InactiveCacheTTL)
	} else {
		e.until = now.Add(i.cfg.MaxCacheTTL)
		if c.Expiry.Before(e.until) {
			e.until = c.Expiry
		}
	}
	if !now.Before(e.until) {
		return
	}
	i.cache.add(e, now)
}

// fromCache answers Validate from the cache. It reports done=false on a
// miss. A hit on an active entry re-checks exp, nbf and iat against now
// (with leeway), and returns a private copy of the claims.
func (i *Introspector) fromCache(k cacheKey, now time.Time) (c *validate.Claims, done bool, err error) {
	e := i.cache.get(k, now)
	switch {
	case e == nil:
		return nil, false, nil
	case e.claims == nil:
		return nil, true, errInactive
	}
	if err := i.checkTimes(e.claims, now); err != nil {
		i.cache.remove(e)
		return nil, true, err
	}
	return cloneClaims(e.claims), true, nil
}

// cloneClaims returns a copy of c that shares no mutable memory with it.
// The claims set behind Decode is an immutable string and is shared.
func cloneClaims(c *validate.Claims) *validate.Claims {
	d := *c
	d.Audience = slices.Clone(c.Audience)
	d.Scopes = slices.Clone(c.Scopes)
	return &d
}
