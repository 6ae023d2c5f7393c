// Package dpop checks OAuth 2.0 DPoP proofs (RFC 9449) for a resource
// server: the proof-of-possession JWTs that clients send in the DPoP
// header with a sender-constrained access token ("Authorization: DPoP
// <token>"). It does no HTTP itself: the caller passes the request method,
// the target URI built from the canonical resource identifier, the access
// token and the DPoP header values.
//
//	v, err := dpop.New(dpop.Config{})
//	proof, err := v.Verify(ctx, dpop.Request{Method: "POST", URI: "https://mcp.example.com/mcp",
//		AccessToken: token, JKT: claims.Confirmation.JKT, Proofs: r.Header.Values("DPoP")})
//
// # What is checked
//
// Every check of RFC 9449 §4.3, in its order: exactly one proof; a compact
// JWS of strict base64url segments whose header and claims are JSON
// objects without duplicate names; "typ" dpop+jwt; "alg" from the
// asymmetric allow-list (never "none" or HMAC); a "jwk" header holding a
// public key of the algorithm's family (private members and symmetric keys
// are refused, RSA needs 2048 bits); the signature under that key; "htm"
// equal to the method; "htu" equal to the target URI after RFC 3986
// normalisation, with no query or fragment; the server nonce when nonces
// are on; "iat" within ±Config.Window (5 minutes by default, SEP-1932);
// "ath" the base64url SHA-256 of the access token. Then the proof key's
// RFC 7638 thumbprint must equal the token's cnf.jkt, and the proof's
// "jti" is recorded in a [ReplayStore] so that it is accepted once. A
// failing [ReplayStore] refuses the proof.
//
// # Replay store and nonces
//
// The default store is a bounded [NewMemoryReplayStore] per Verifier, whose
// capacity is shared fairly between partitions ([Request.Partition]): one
// principal filling it evicts only its own entries, never letting a replay
// through (see [NewMemoryReplayStore]). Replicas
// must share one store, or a proof refused by one replica is accepted by
// the next. Server nonces are stateless (an HMAC of a time slot under a
// shared secret), so they need no store at all.
package dpop
