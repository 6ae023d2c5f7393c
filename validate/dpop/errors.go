package dpop

import (
	"errors"
	"fmt"
)

// ErrInvalidProof is wrapped by every error of [Verifier.Verify] that
// makes the proof itself unacceptable (RFC 9449 §4.3; answered with
// error="invalid_dpop_proof", §7.1). The sentinels below wrap it, except
// [ErrKeyBinding], [ErrUseNonce] and [ErrReplayStore], which call for
// other answers. Error text never contains a value read from the proof.
var ErrInvalidProof = errors.New("dpop: invalid proof")

// Sentinel errors, one per §4.3 check, for [errors.Is]. The text is part
// of the API.
var (
	// ErrNoProof: no DPoP header field (§4.3 check 1, §7.1).
	ErrNoProof = fmt.Errorf("%w: no DPoP header", ErrInvalidProof)
	// ErrMultipleProofs: more than one DPoP header field (§4.3 check 1).
	ErrMultipleProofs = fmt.Errorf("%w: more than one DPoP header", ErrInvalidProof)
	// ErrTooLarge: the proof exceeds Config.MaxProofBytes.
	ErrTooLarge = fmt.Errorf("%w: proof too large", ErrInvalidProof)
	// ErrMalformed: not a compact JWS of three strict base64url segments,
	// header or claims not a JSON object (duplicate member names and
	// invalid UTF-8 are refused), a member of the wrong type, or a
	// required header or claim missing (§4.3 checks 2 and 3).
	ErrMalformed = fmt.Errorf("%w: malformed proof", ErrInvalidProof)
	// ErrType: "typ" is not "dpop+jwt", or a "crit" header is present
	// (§4.3 check 4).
	ErrType = fmt.Errorf("%w: typ is not dpop+jwt", ErrInvalidProof)
	// ErrAlgorithm: "alg" is not an asymmetric algorithm of
	// Config.Algorithms ("none" and HMAC never are; §4.3 check 5).
	ErrAlgorithm = fmt.Errorf("%w: algorithm not allowed", ErrInvalidProof)
	// ErrKey: the "jwk" header is not a valid public key: a private key,
	// a symmetric key, an RSA key under 2048 bits, or a key that does not
	// fit "alg" (§4.3 check 7).
	ErrKey = fmt.Errorf("%w: jwk is not an acceptable public key", ErrInvalidProof)
	// ErrSignature: the signature does not verify under "jwk" (§4.3
	// check 6).
	ErrSignature = fmt.Errorf("%w: invalid signature", ErrInvalidProof)
	// ErrMethod: "htm" differs from the request method (§4.3 check 8;
	// compared case-sensitively, as RFC 9110 §9.1 methods are).
	ErrMethod = fmt.Errorf("%w: htm does not match the request", ErrInvalidProof)
	// ErrURI: "htu" has a query or fragment, or differs from the target
	// URI after RFC 3986 §6.2.2 and §6.2.3 normalisation (§4.3 check 9).
	ErrURI = fmt.Errorf("%w: htu does not match the request", ErrInvalidProof)
	// ErrIssuedAt: "iat" is outside Config.Window around now (§4.3
	// check 11, §11.1).
	ErrIssuedAt = fmt.Errorf("%w: iat outside the accepted window", ErrInvalidProof)
	// ErrReplay: the proof's "jti" was already used within the window
	// (§11.1).
	ErrReplay = fmt.Errorf("%w: jti replayed", ErrInvalidProof)
	// ErrAccessTokenHash: "ath" is missing or is not the hash of the
	// presented access token (§4.3 check 12, §7).
	ErrAccessTokenHash = fmt.Errorf("%w: ath does not match the access token", ErrInvalidProof)
)

// Errors that are not [ErrInvalidProof].
var (
	// ErrKeyBinding: the proof's key is not the key the access token is
	// bound to: its RFC 7638 thumbprint differs from cnf.jkt (§6.1, §7;
	// answered as error="invalid_token").
	ErrKeyBinding = errors.New("dpop: proof key does not match the token's cnf.jkt")
	// ErrUseNonce: nonces are required and the proof has none, or one
	// that is not current (§8, §9; answered as error="use_dpop_nonce"
	// with a fresh DPoP-Nonce).
	ErrUseNonce = errors.New("dpop: proof needs a current server nonce")
	// ErrReplayStore: the [ReplayStore] failed. The proof is refused
	// (fail closed); the HTTP layer answers 503, since the client is not
	// at fault.
	ErrReplayStore = errors.New("dpop: replay store unavailable")
	// ErrStoreFull: a [MemoryReplayStore] holds its maximum of unexpired
	// entries. It is returned by Claim and so wrapped in ErrReplayStore.
	ErrStoreFull = errors.New("dpop: replay store full")
	// ErrConfig: [New] was given an unusable [Config].
	ErrConfig = errors.New("dpop: invalid config")
)
