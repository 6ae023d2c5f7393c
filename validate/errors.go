package validate

import "errors"

// Error is the error of a refused token. Every error of
// [Validator.Validate], except [ErrKeysUnavailable] and a context error,
// wraps exactly one Error; so do the token validators of
// validate/introspect. Branch on it with [errors.Is] and a value
// (errors.Is(err, validate.Error{Reason: "expired"})) or with [errors.As].
// Error text never contains unverified claim values.
type Error struct {
	// Reason names the check the token failed. The reasons are stable and
	// are the labels otelguard reports:
	//   - "malformed": not a compact JWS with three base64url segments,
	//     header or payload not a JSON object, or a claim of the wrong
	//     JSON type.
	//   - "too_large": the raw token exceeds Config.MaxTokenBytes, checked
	//     before any decoding.
	//   - "algorithm": the JWS "alg" is not in the allow-list, or the token
	//     is unsigned ("none") or HMAC-signed.
	//   - "type": the JOSE "typ" is not "at+jwt" (RFC 9068 §2.1), a
	//     forbidden header ("crit", "b64", "jku", "x5u", "jwk", "x5c") is
	//     present, or a "cty" header marks a nested JWT or other payload.
	//   - "unknown_key": no usable key of the token's issuer has the
	//     token's "kid" (after at most one rate-limited refresh).
	//   - "signature": the signature does not verify under the selected key.
	//   - "issuer": "iss" is not one of the configured issuers (exact match).
	//   - "audience": "aud" does not contain a configured audience, or
	//     holds several audiences when that is refused.
	//   - "client": "client_id"/"azp" is not in Config.AllowedClients.
	//   - "expired": "exp" is at or before now minus leeway.
	//   - "not_yet_valid": "nbf" is after now plus leeway.
	//   - "issued_at": "iat" is after now plus leeway.
	//   - "lifetime": exp - iat exceeds Config.MaxTokenLifetime.
	//   - "missing_claim": a required claim is absent or empty.
	//   - "inactive": an introspection endpoint reported the token inactive.
	//   - "sender_constrained": the token carries a "cnf" confirmation
	//     (RFC 7800 §3.1), so it is bound to a key its presenter must prove
	//     possession of (DPoP, RFC 9449 §6; mTLS, RFC 8705 §3), and may not
	//     be used as a bearer token. Without Config.AllowConfirmation every
	//     token with "cnf" fails with it; with it, a "cnf" holding any
	//     member other than "jkt" still does, since only DPoP can be
	//     verified. The middleware answers 401 invalid_token.
	Reason string
}

// Error returns the text of the reason ("validate: token expired"); the
// text is part of the API.
func (e Error) Error() string {
	switch e.Reason {
	case "malformed":
		return "validate: malformed token"
	case "too_large":
		return "validate: token too large"
	case "algorithm":
		return "validate: unsupported algorithm"
	case "type":
		return "validate: wrong token type"
	case "unknown_key":
		return "validate: signing key not found"
	case "signature":
		return "validate: invalid signature"
	case "issuer":
		return "validate: untrusted issuer"
	case "audience":
		return "validate: wrong audience"
	case "client":
		return "validate: client not allowed"
	case "expired":
		return "validate: token expired"
	case "not_yet_valid":
		return "validate: token not yet valid"
	case "issued_at":
		return "validate: token issued in the future"
	case "lifetime":
		return "validate: token lifetime too long"
	case "missing_claim":
		return "validate: missing required claim"
	case "inactive":
		return "validate: token inactive"
	case "sender_constrained":
		return "validate: sender-constrained token"
	}
	return "validate: token refused (" + e.Reason + ")"
}

// The refusals this package returns, wrapped with detail.
var (
	errMalformed            error = Error{"malformed"}
	errTooLarge             error = Error{"too_large"}
	errUnsupportedAlgorithm error = Error{"algorithm"}
	errType                 error = Error{"type"}
	errKeyNotFound          error = Error{"unknown_key"}
	errSignature            error = Error{"signature"}
	errIssuer               error = Error{"issuer"}
	errAudience             error = Error{"audience"}
	errClient               error = Error{"client"}
	errExpired              error = Error{"expired"}
	errNotYetValid          error = Error{"not_yet_valid"}
	errIssuedAt             error = Error{"issued_at"}
	errLifetime             error = Error{"lifetime"}
	errMissingClaim         error = Error{"missing_claim"}
	errSenderConstrained    error = Error{"sender_constrained"}
)

var (
	// ErrKeysUnavailable: the issuer's key set could not be obtained at all
	// (authorization server down since start), or an introspection endpoint
	// is unreachable. The token was not judged, so this is not an [Error]:
	// the HTTP layer answers 503, not 401, so that clients do not loop
	// through re-authorization.
	ErrKeysUnavailable = errors.New("validate: keys unavailable")
	// ErrConfig: [New] was given an unusable [Config] (no issuer, no
	// audience, no key source, a duplicate issuer, an HMAC or "none"
	// algorithm, a negative limit, …). Only [New] returns it.
	ErrConfig = errors.New("validate: invalid config")
)
