// Package redisstore keeps the state that replicas of an MCP server (or
// of an authorization server built on cimd) must share in Redis or
// Valkey, through github.com/redis/go-redis/v9:
//
//   - [StepUpStore], a middleware.StepUpStore: one step-up bound across
//     replicas;
//   - [NewClientStore], a cimd.Store: dynamic registrations every replica
//     knows;
//   - [NewReplayStore]: the DPoP proof replay cache (validate/dpop's
//     ReplayStore);
//   - [OwnerStore], a middleware.OwnerStore (SessionConfig.Store): which
//     principal owns each MCP session, across replicas and restarts;
//   - [PinStore], a middleware.PinStore (ToolPins.Store): each route's
//     pinned tool definitions, across replicas and restarts.
//
// A program that does not import this package does not link go-redis.
// The in-process stores (the middleware's own when Config.StepUpStore is nil,
// cimd/boltstore) stay the default for a single process.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379"})
//	steps, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb})
//	if err != nil { … }
//	// middleware.Config{StepUpStore: steps, …}
//
// # Keys, TTLs and atomicity
//
// Every key starts with Config.Prefix ("mcpguard:" by default) and a
// store name ("stepup:", "replay:", "client:", "dcrquota:", "owner:",
// "pins:"). Step-up,
// replay and owner keys are the base64url SHA-256 of the caller's key (for
// owners: the kind and the session or task ID), so they are 43 bytes
// whatever the principal and hold no subject; step-up and replay keys
// start with the hash of their partition in a hash tag ("{…}"), so that
// a partition's keys share one Redis Cluster slot. Client keys are the
// client_id when it is short printable ASCII, its hash otherwise. Every
// key is written with a TTL, so nothing outlives its purpose, and no set
// grows without bound:
//
//   - step-up: INCR and, for a new counter, PEXPIRE window and the
//     partition's index (a partition is a user; a sorted set of at most
//     1 000 counters, by window end), in one Lua script; Reset is DEL and ZREM;
//   - replay: one Lua script over the partition's sorted set of proofs
//     by expiry (at most 10 000, TTL its latest expiry) and its floor (see
//     [NewReplayStore]);
//   - owners: GET and SET PX idle timeout (Claim), GET and PEXPIRE idle
//     timeout (Owner, on every request of the session), each one Lua
//     script; Forget is DEL. The value is the owner's Principal.UserID
//     (Principal.ID with SessionConfig.BindClient);
//   - pins: one hash per route (hashed key, two fields per tool, at most
//     10 000 tools), written by one Lua script per tools/list answer
//     (HSET of new pins and last listed digests, PEXPIRE 400 days), read
//     with HMGET per tools/call;
//   - clients: SET key record PX ttl (Config.ClientTTL, 90 days by
//     default, or the secret's expiry when sooner); GET;
//   - the DCR per-network quota of the client store (a
//     cimd.NetworkQuota): one Lua script over the network's sorted set of
//     registration times (hashed key, at most DCRConfig.NetworkClients
//     members, TTL the window).
//
// Each operation has its own deadline (Config.Timeout, 250 ms) inside the
// caller's context.
//
// # When Redis is down
//
//   - [OwnerStore] fails closed: the middleware answers every request
//     that carries a session ID, and every answer that creates a session,
//     with 503 and Retry-After, and logs the outage once per reason
//     (until a call succeeds again). Requests without a session ID
//     (stateless servers) are not affected.
//   - [PinStore] fails closed: a tools/list answer is refused (502, or
//     its SSE event removed) and a tools/call answered 503 with
//     Retry-After, on routes that pin tools.
//   - The replay store's Claim fails closed: it returns an error and
//     fresh=false, and the proof is refused (a 401 the client can retry).
//     Accepting a proof that might be a replay would defeat DPoP.
//   - [StepUpStore.Incr] returns an error; the middleware then sends the
//     ordinary insufficient_scope challenge, uncounted, and logs a
//     warning. The step-up bound fails open, because it is a courtesy to
//     clients that cannot obtain a scope, not an access control: the
//     request is refused (403) either way, and failing closed would turn
//     a Redis outage into terminal refusals of every legitimate step-up.
//     A failed Reset leaves the counter to expire with its window.
//   - The client store's Get returns an error that does not wrap
//     cimd.ErrUnknownClient, so the registry answers it as a server error
//     rather than as "unknown client". Registration fails closed: the
//     store's network quota (checked before Put) fails, so a
//     cimd.DCRHandler over it answers 503 with Retry-After and stores
//     nothing; a Put that fails on its own answers 500, and nothing
//     half-registered remains.
//
// Authorized requests touch Redis only with the OwnerStore (one round
// trip per request carrying a session ID): the middleware calls the
// step-up store only when it answers insufficient_scope, and token
// validation uses per-process key sets and caches (docs/operations.md).
package redisstore
