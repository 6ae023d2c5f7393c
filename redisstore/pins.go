package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of the pin store.
const (
	// pinRouteTools bounds the tools one route's pins hold, as the
	// middleware's in-process store does: a tool beyond gets no pin.
	pinRouteTools = 10000
	// pinTTL is how long a route's pins live after the last tools/list
	// answer that was checked against them.
	pinTTL = 400 * 24 * time.Hour
)

// observeScript records the tools of one tools/list answer in the
// route's hash (KEYS[1]): for each pair ARGV[3+2i], ARGV[4+2i] (tool,
// digest), the field "p:"..tool (its pin) is set unless present, while
// the route holds fewer than ARGV[2] tools, and the field "l:"..tool
// (the digest last listed) is set for every pinned tool; it returns the
// pins, "" for a tool without one, and renews the hash's TTL (ARGV[1]
// ms). Each tool has both fields or neither, so the route holds HLEN/2
// tools. One key: Cluster-safe.
var observeScript = redis.NewScript(`
local n = redis.call('HLEN', KEYS[1]) / 2
local max = tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV, 2 do
  local pf, lf = 'p:' .. ARGV[i], 'l:' .. ARGV[i]
  local pin = redis.call('HGET', KEYS[1], pf)
  if not pin then
    if n < max then
      redis.call('HSET', KEYS[1], pf, ARGV[i + 1])
      pin = ARGV[i + 1]
      n = n + 1
    else
      pin = ''
    end
  end
  if pin ~= '' then
    redis.call('HSET', KEYS[1], lf, ARGV[i + 1])
  end
  out[#out + 1] = pin
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return out
`)

// PinStore is a middleware.PinStore in Redis (middleware ToolPins.Store):
// replicas that share the Redis and prefix agree on each route's pinned
// tool definitions, and a restarted process keeps them. Create it with
// [NewPinStore]; it is safe for concurrent use.
//
// A route's pins are one hash, the prefix "pins:" and the SHA-256 of the
// route (its resource URL), with two fields per tool: "p:" and the tool's
// name, its pin, and "l:" and the name, the digest it was last listed
// with. It holds at most 10,000 tools; a tool beyond gets no pin (and so
// is never listed). Its TTL is 400 days, renewed by every tools/list
// answer checked against it: a route whose tools are not listed for that
// long forgets its pins, and pins them again when next listed. An error
// wraps [ErrUnavailable]; the middleware then refuses the list answer
// (502) or the call (503): fail closed.
type PinStore struct {
	b        base
	maxTools int
}

// NewPinStore returns a PinStore. An unusable cfg is an error whose text
// starts "redisstore: invalid config".
func NewPinStore(cfg Config) (*PinStore, error) {
	b, err := newBase(cfg, "pins:")
	if err != nil {
		return nil, err
	}
	return &PinStore{b: b, maxTools: pinRouteTools}, nil
}

// Observe implements middleware.PinStore: one Lua script over the
// route's hash.
func (s *PinStore) Observe(ctx context.Context, route string, tools, digests []string) ([]string, error) {
	if len(tools) != len(digests) {
		return nil, fmt.Errorf("%w: Observe: %d tools and %d digests", errConfig, len(tools), len(digests))
	}
	args := make([]any, 0, 2+2*len(tools))
	args = append(args, pinTTL.Milliseconds(), s.maxTools)
	for i, t := range tools {
		args = append(args, t, digests[i])
	}
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	pins, err := observeScript.Run(ctx, s.b.rdb, []string{s.b.hashedKey(route)}, args...).StringSlice()
	if err != nil {
		return nil, unavailable("pin observe", err)
	}
	if len(pins) != len(tools) {
		return nil, unavailable("pin observe", errors.New("wrong number of pins"))
	}
	return pins, nil
}

// Lookup implements middleware.PinStore: one HMGET.
func (s *PinStore) Lookup(ctx context.Context, route, tool string) (pin, listed string, err error) {
	ctx, cancel := s.b.ctx(ctx)
	defer cancel()
	v, err := s.b.rdb.HMGet(ctx, s.b.hashedKey(route), "p:"+tool, "l:"+tool).Result()
	if err != nil {
		return "", "", unavailable("pin lookup", err)
	}
	pin, _ = v[0].(string)
	listed, _ = v[1].(string)
	return pin, listed, nil
}
