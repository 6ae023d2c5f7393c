package validate

import "errors"

// Sentinel errors. Every error returned by [Validator.Validate] wraps exactly
// one of these, so callers can branch with [errors.Is]. Error text never
// contains unverified claim values. The text is part of the API.
var (
	// ErrMalformed: the token is not a compact JWS with three base64url
	// segments, its header or payload is not a JSON object, or a claim has
	// the wrong JSON type.
	ErrMalformed = errors.New("validate: malformed token")
	// ErrTooLarge: the raw token exceeds Config.MaxTokenBytes. Checked before
	// any decoding.
	ErrTooLarge = errors.New("validate: token too large")
	// ErrUnsupportedAlgorithm: the JWS "alg" is not in the allow-list, or the
	// token is unsigned ("none") or HMAC-signed.
	ErrUnsupportedAlgorithm = errors.New("validate: unsupported algorithm")
	// ErrType: the JOSE "typ" header is not "at+jwt" (RFC 9068 §2.1), or a
	// forbidden header ("crit", "b64", "jku", "x5u", "jwk", "x5c") is present,
	// or a "cty" header marks a nested JWT or other non-claims payload.
	ErrType = errors.New("validate: wrong token type")
	// ErrKeyNotFound: no usable key of the token's issuer has the token's
	// "kid" (after at most one rate-limited refresh).
	ErrKeyNotFound = errors.New("validate: signing key not found")
	// ErrSignature: the signature does not verify under the selected key.
	ErrSignature = errors.New("validate: invalid signature")
	// ErrIssuer: "iss" is not one of the configured issuers (exact match).
	ErrIssuer = errors.New("validate: untrusted issuer")
	// ErrAudience: "aud" does not contain a configured audience, or holds
	// several audiences when that is refused.
	ErrAudience = errors.New("validate: wrong audience")
	// ErrClient: "client_id"/"azp" is not in Config.AllowedClients.
	ErrClient = errors.New("validate: client not allowed")
	// ErrExpired: "exp" is at or before now minus leeway.
	ErrExpired = errors.New("validate: token expired")
	// ErrNotYetValid: "nbf" is after now plus leeway.
	ErrNotYetValid = errors.New("validate: token not yet valid")
	// ErrIssuedAt: "iat" is after now plus leeway.
	ErrIssuedAt = errors.New("validate: token issued in the future")
	// ErrLifetime: exp - iat exceeds Config.MaxTokenLifetime.
	ErrLifetime = errors.New("validate: token lifetime too long")
	// ErrMissingClaim: a required claim is absent or empty.
	ErrMissingClaim = errors.New("validate: missing required claim")
	// ErrKeysUnavailable: the issuer's key set could not be obtained at all
	// (authorization server down since start), or an introspection endpoint
	// is unreachable. The HTTP layer answers 503, not 401, so that clients do
	// not loop through re-authorization.
	ErrKeysUnavailable = errors.New("validate: keys unavailable")
	// ErrInactive: an introspection endpoint reported the token inactive.
	ErrInactive = errors.New("validate: token inactive")
	// ErrSenderConstrained: the token carries a "cnf" confirmation (RFC
	// 7800 §3.1), so it is bound to a key its presenter must prove
	// possession of (DPoP, RFC 9449 §6; mTLS, RFC 8705 §3), and may not be
	// used as a bearer token. Without Config.AllowConfirmation every
	// token with "cnf" fails with it; with it, a "cnf" holding any member
	// other than "jkt" still does, since only DPoP can be verified. The
	// middleware answers 401 invalid_token.
	ErrSenderConstrained = errors.New("validate: sender-constrained token")
	// ErrConfig: [New] was given an unusable [Config] (no issuer, no
	// audience, no key source, a duplicate issuer, an HMAC or "none"
	// algorithm, a negative limit, …). Only [New] returns it.
	ErrConfig = errors.New("validate: invalid config")
)
