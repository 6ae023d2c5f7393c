package validate

import (
	"github.com/mcpguard/mcpguard/internal/jws"
)

// maxCandidateKeys bounds the signature verifications spent on one token
// (per attempt) when its kid, or the absence of one, maps to several
// usable keys: beyond it the token is refused untried.
const maxCandidateKeys = 8

// Ed25519 is the fully specified JWS algorithm name of RFC 9864 §2.2:
// EdDSA with the Ed25519 curve only. It verifies exactly as "EdDSA" does
// on an Ed25519 key (RFC 8037 §3.1); go-jose v4.1 has no constant for it.
const Ed25519 = jws.Ed25519

// The signature arithmetic (the algorithm table, the key-to-algorithm
// match, the verification with crypto/ecdsa, crypto/rsa and
// crypto/ed25519) is internal/jws, shared with validate/dpop
// (docs/jose.md).
