// Package jwks is a remote JWK Set (RFC 7517) key source for
// [github.com/mcpguard/mcpguard/validate]: it fetches an authorization
// server's signing keys, keeps them fresh in the background, and survives
// key rotation, outages, hanging servers and floods of unknown key IDs.
//
//	src, err := jwks.New(jwks.Config{Issuer: "https://auth.example.com"}) // jwks_uri discovered
//	if err != nil { … }
//	defer src.Close()
//	// validate.Issuer{Issuer: "https://auth.example.com", Keys: src}
//
// # Behaviour
//
// [New] returns at once; one goroutine fetches the set immediately and then
// every RefreshInterval (15 min). Without Config.JWKSURL the jwks_uri is
// discovered from the issuer's RFC 8414 / OIDC metadata with
// [github.com/mcpguard/mcpguard/asmeta.Discover], in the background, with
// the issuer mix-up check; the result is cached.
//
// [Source.Keys] answers known kids from an immutable snapshot: no lock, no
// allocation, no call into jwkset or keyfunc. An unknown kid, or a
// signature that fails under a known kid ([Source.Refresh]), may start one
// single-flight refresh per RefreshRateLimit (4 s); a request waits for a
// refresh that is running up to WaitTimeout (2 s). When the limit refuses,
// one deferred refresh runs when the limit opens, and the request waits for
// it (at most DeferredWaiters, 64, requests wait; the others fail at once),
// so a token signed with a key the authorization server has just published
// is accepted on its first presentation, within RefreshRateLimit plus one
// fetch. Keys published without a kid are kept: Keys(ctx, "") returns
// every usable key, for tokens without a kid (RFC 7515 §4.1.4). An on-demand refresh that succeeds puts the
// background schedule back on RefreshInterval. This is the project's key
// policy (docs/DESIGN.md, docs/keys.md); jwkset's RefreshUnknownKID
// limiter, whose Wait can block for a minute, is never used.
//
// Failures never make things worse: a failed refresh (network error, 5xx,
// 429, wrong media type, body over MaxBytes, not a JWK Set, no usable key)
// keeps the last good set, and after a failure the goroutine retries with
// backoff (1 s doubling to 30 s, honouring Retry-After). Until a
// first set has been obtained, Keys fails with an error wrapping
// validate.ErrKeysUnavailable (the HTTP layer answers 503) and recovers by
// itself once the server is back.
//
// # Key filters
//
// Each member of "keys" is parsed on its own, so one malformed or
// unsupported key never spoils the set. A key is dropped, and logged, when:
//
//   - "use" is present and not "sig" (for example "enc");
//   - "key_ops" is present and lacks "verify";
//   - it is symmetric ("kty": "oct");
//   - it contains private key material ("d", "p", "k", …): the key is
//     compromised, so it is dropped rather than reduced to its public part;
//   - it is RSA with a modulus under 2048 bits, EC on a curve other than
//     P-256, P-384 or P-521, or any other type than RSA, EC and Ed25519;
//   - "alg" is present and cannot be verified with the key (RS*/PS* for RSA,
//     ES256/384/512 matching the curve, EdDSA or Ed25519 for Ed25519).
//
// "alg" is kept on the served key so that validate can check the token's
// algorithm against it.
//
// # Fetching
//
// Fetches go through internal/fetch: https (http only to loopback hosts),
// FetchTimeout, a MaxBytes cap applied after decompression, status 200,
// same-origin redirects only, no environment proxies. The media type must
// be JSON (application/json or a +json type such as
// application/jwk-set+json); other types, text/plain included, fail closed,
// because accepting them would let any file served from the host pass as a
// key set. A server with a wrong Content-Type must be fixed.
//
// # keyfunc and jwkset
//
// [FromStorage] adapts an existing jwkset.Storage (keyfunc v3's
// k.Storage()) to validate.KeySource with the same filters; it never calls
// the storage's KeyRead, so keyfunc's limiter never blocks a request.
// Config.Storage, if set, receives a copy of the keys a Source serves.
package jwks
