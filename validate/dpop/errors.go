package dpop

import "errors"

// ErrInvalidProof is wrapped by every error of [Verifier.Verify] that
// makes the proof itself unacceptable (RFC 9449 §4.3; answered with
// error="invalid_dpop_proof", §7.1): every [Error] but those with the
// reasons "key_binding", "use_nonce" and "replay_store", which call for
// other answers. Error text never contains a value read from the proof.
var ErrInvalidProof = errors.New("dpop: invalid proof")

// ErrConfig: [New] was given an unusable [Config].
var ErrConfig = errors.New("dpop: invalid config")

// Error is the error of a refused proof: every error of [Verifier.Verify]
// wraps exactly one. Branch on it with [errors.Is] and a value
// (errors.Is(err, dpop.Error{Reason: "replay"})), with [errors.As], or
// on the family with errors.Is(err, ErrInvalidProof). The text is part of
// the API.
type Error struct {
	// Reason names the check. Wrapping [ErrInvalidProof]:
	//   - "no_proof": no DPoP header field (§4.3 check 1, §7.1).
	//   - "multiple_proofs": more than one DPoP header field (§4.3 check 1).
	//   - "too_large": the proof exceeds Config.MaxProofBytes.
	//   - "malformed": not a compact JWS of three strict base64url
	//     segments, header or claims not a JSON object (duplicate member
	//     names and invalid UTF-8 are refused), a member of the wrong type,
	//     or a required header or claim missing (§4.3 checks 2 and 3).
	//   - "type": "typ" is not "dpop+jwt", or a "crit" header is present
	//     (§4.3 check 4).
	//   - "algorithm": "alg" is not an asymmetric algorithm of
	//     Config.Algorithms ("none" and HMAC never are; §4.3 check 5).
	//   - "key": the "jwk" header is not a valid public key: a private
	//     key, a symmetric key, an RSA key under 2048 bits, or a key that
	//     does not fit "alg" (§4.3 check 7).
	//   - "signature": the signature does not verify under "jwk" (§4.3
	//     check 6).
	//   - "method": "htm" differs from the request method (§4.3 check 8;
	//     compared case-sensitively, as RFC 9110 §9.1 methods are).
	//   - "uri": "htu" has a query or fragment, or differs from the target
	//     URI after RFC 3986 §6.2.2 and §6.2.3 normalisation (§4.3 check 9).
	//   - "issued_at": "iat" is outside Config.Window around now (§4.3
	//     check 11, §11.1).
	//   - "replay": the proof's "jti" was already used within the window
	//     (§11.1).
	//   - "access_token_hash": "ath" is missing or is not the hash of the
	//     presented access token (§4.3 check 12, §7).
	// Not wrapping it:
	//   - "key_binding": the proof's key is not the key the access token is
	//     bound to: its RFC 7638 thumbprint differs from cnf.jkt (§6.1, §7;
	//     answered as error="invalid_token").
	//   - "use_nonce": nonces are required and the proof has none, or one
	//     that is not current (§8, §9; answered as error="use_dpop_nonce"
	//     with a fresh DPoP-Nonce).
	//   - "replay_store": the [ReplayStore] failed (its error is wrapped
	//     too). The proof is refused (fail closed); the HTTP layer answers
	//     503, since the client is not at fault.
	Reason string
}

// Error returns the text of the reason.
func (e Error) Error() string {
	switch e.Reason {
	case "no_proof":
		return "dpop: invalid proof: no DPoP header"
	case "multiple_proofs":
		return "dpop: invalid proof: more than one DPoP header"
	case "too_large":
		return "dpop: invalid proof: proof too large"
	case "malformed":
		return "dpop: invalid proof: malformed proof"
	case "type":
		return "dpop: invalid proof: typ is not dpop+jwt"
	case "algorithm":
		return "dpop: invalid proof: algorithm not allowed"
	case "key":
		return "dpop: invalid proof: jwk is not an acceptable public key"
	case "signature":
		return "dpop: invalid proof: invalid signature"
	case "method":
		return "dpop: invalid proof: htm does not match the request"
	case "uri":
		return "dpop: invalid proof: htu does not match the request"
	case "issued_at":
		return "dpop: invalid proof: iat outside the accepted window"
	case "replay":
		return "dpop: invalid proof: jti replayed"
	case "access_token_hash":
		return "dpop: invalid proof: ath does not match the access token"
	case "key_binding":
		return "dpop: proof key does not match the token's cnf.jkt"
	case "use_nonce":
		return "dpop: proof needs a current server nonce"
	case "replay_store":
		return "dpop: replay store unavailable"
	}
	return "dpop: proof refused (" + e.Reason + ")"
}

// Is reports whether target is [ErrInvalidProof] and e a refusal of the
// proof itself (errors.Is compares other Error values by Reason).
func (e Error) Is(target error) bool {
	if target != ErrInvalidProof {
		return false
	}
	switch e.Reason {
	case "key_binding", "use_nonce", "replay_store":
		return false
	}
	return true
}

// The refusals of this package.
var (
	errNoProof         error = Error{"no_proof"}
	errMultipleProofs  error = Error{"multiple_proofs"}
	errTooLarge        error = Error{"too_large"}
	errMalformed       error = Error{"malformed"}
	errType            error = Error{"type"}
	errAlgorithm       error = Error{"algorithm"}
	errKey             error = Error{"key"}
	errSignature       error = Error{"signature"}
	errMethod          error = Error{"method"}
	errURI             error = Error{"uri"}
	errIssuedAt        error = Error{"issued_at"}
	errReplay          error = Error{"replay"}
	errAccessTokenHash error = Error{"access_token_hash"}
	errKeyBinding      error = Error{"key_binding"}
	errUseNonce        error = Error{"use_nonce"}
	errReplayStore     error = Error{"replay_store"}

	// errStoreFull: a [NewMemoryReplayStore] store holds its maximum of unexpired
	// entries. Claim returns it, so Verify wraps it in "replay_store".
	errStoreFull = errors.New("dpop: replay store full")
)
