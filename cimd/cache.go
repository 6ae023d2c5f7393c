package cimd

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// docCache is the Resolver's bounded cache of documents by client_id,
// shared fairly between the hosts that serve them ([fairlru], partitioned
// by the client_id's host and port): when it is full, the least recently
// used document of the host holding the most leaves, so one host minting
// endless client_id URLs evicts only its own documents, never another
// host's (whose clients would then need a fetch, under the shared global
// fetch limit, again).
type docCache struct {
	mu sync.Mutex
	c  *fairlru.Cache[string, cached]
}

func newDocCache(size int) *docCache {
	return &docCache{c: fairlru.New[string, cached](fairlru.Config{MaxEntries: size})}
}

// get returns the fresh document for clientID at now; an expired one is
// dropped.
func (c *docCache) get(clientID string, now time.Time) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.c.Get(clientID, now); e != nil {
		return e.Value, true
	}
	return cached{}, false
}

// add caches v for clientID, served by host, until v.expires.
func (c *docCache) add(host, clientID string, v cached, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Add(host, clientID, v, v.expires, now)
}

func (c *docCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Len()
}

// cached is a validated document and the time it stops being fresh.
type cached struct {
	doc     *Document
	expires time.Time
}

// cacheLifetime derives how long a document may be cached from its
// response's Cache-Control (RFC 9111 §5.2.2):
//
//   - no-store or no-cache: not cached (ok is false); the document is
//     still used for the lookup that fetched it;
//   - max-age=N (token or quoted form): N seconds, clamped to [lo, hi];
//     a value too large to represent counts as the largest (§1.2.2);
//   - no max-age, a malformed one (negative, non-numeric) or conflicting
//     repeated ones: lo.
//
// Expires, Age and other directives are ignored.
func cacheLifetime(h http.Header, lo, hi time.Duration) (ttl time.Duration, ok bool) {
	seconds := int64(-1)
	invalid := false
	for _, line := range h.Values("Cache-Control") {
		for dir := range strings.SplitSeq(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0, false
			case "max-age":
				n, good := parseDeltaSeconds(val)
				if !good || (seconds >= 0 && n != seconds) {
					invalid = true
				}
				seconds = n
			}
		}
	}
	if invalid || seconds < 0 {
		return lo, true
	}
	ttl = hi
	if seconds < int64(hi/time.Second) {
		ttl = time.Duration(seconds) * time.Second
	}
	return max(lo, min(ttl, hi)), true
}

// parseDeltaSeconds parses RFC 9111 §1.2.2 delta-seconds, also accepting
// the quoted form. Overflow yields the largest value.
func parseDeltaSeconds(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" {
		return -1, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return -1, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil { // only ErrRange is possible here
		return math.MaxInt64, true
	}
	return n, true
}
