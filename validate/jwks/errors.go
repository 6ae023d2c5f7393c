package jwks

import "errors"

// Sentinel errors. Every error from this package wraps one of them or a
// validate sentinel ([validate.Error] "unknown_key", [validate.ErrKeysUnavailable]);
// the text is part of the API.
var (
	// ErrConfig: [New] was given an invalid [Config].
	ErrConfig = errors.New("jwks: invalid config")
	// ErrRateLimited: an on-demand refresh was refused because the last one
	// started less than Config.RefreshRateLimit ago.
	ErrRateLimited = errors.New("jwks: refresh rate limited")
	// ErrWaitTimeout: a running refresh did not finish within
	// Config.WaitTimeout. The refresh itself goes on in the background.
	ErrWaitTimeout = errors.New("jwks: timed out waiting for refresh")
	// ErrClosed: the [Source] has been closed; it still serves the keys it
	// has but never fetches again.
	ErrClosed = errors.New("jwks: source closed")
	// ErrInvalidSet: the fetched document is not a JWK Set (RFC 7517 §5): not
	// a JSON object with a "keys" array.
	ErrInvalidSet = errors.New("jwks: invalid jwk set")
	// ErrNoUsableKeys: the fetched JWK Set holds no key that passes the
	// filters (see the package documentation). The previous set is kept.
	ErrNoUsableKeys = errors.New("jwks: no usable keys")
	// ErrDiscovery: the jwks_uri could not be discovered from the issuer's
	// metadata; the error also wraps the asmeta sentinel that says why.
	ErrDiscovery = errors.New("jwks: discovery failed")
)
