package jwks

import "errors"

// ErrConfig: [New] was given an invalid [Config]. Every other error of this
// package wraps a validate sentinel ([validate.Error] "unknown_key",
// [validate.ErrKeysUnavailable]) or is a refresh error, which
// [Health].Cause and [RefreshEnd].Cause classify ("invalid_set",
// "no_usable_keys", "closed", …); the text is part of the API.
var ErrConfig = errors.New("jwks: invalid config")

// The refusals and refresh failures of this package, wrapped with detail.
// They are not exported: callers branch on the validate sentinels, on
// [Cause] for refresh failures, or on nil for [Source.WaitReady].
var (
	// errRateLimited: an on-demand refresh was refused because the last one
	// started less than Config.RefreshRateLimit ago.
	errRateLimited = errors.New("jwks: refresh rate limited")
	// errWaitTimeout: a running refresh did not finish within
	// Config.WaitTimeout. The refresh itself goes on in the background.
	errWaitTimeout = errors.New("jwks: timed out waiting for refresh")
	// errClosed: the [Source] has been closed; it still serves the keys it
	// has but never fetches again (Cause "closed").
	errClosed = errors.New("jwks: source closed")
	// errInvalidSet: the fetched document is not a JWK Set (RFC 7517 §5): not
	// a JSON object with a "keys" array (Cause "invalid_set").
	errInvalidSet = errors.New("jwks: invalid jwk set")
	// errNoUsableKeys: the fetched JWK Set holds no key that passes the
	// filters (see the package documentation). The previous set is kept
	// (Cause "no_usable_keys").
	errNoUsableKeys = errors.New("jwks: no usable keys")
	// errDiscovery: the jwks_uri could not be discovered from the issuer's
	// metadata; the error also wraps the asmeta error that says why.
	errDiscovery = errors.New("jwks: discovery failed")
	// errNotReady: [Source.WaitReady] ended before a first key set was
	// loaded.
	errNotReady = errors.New("jwks: no key set loaded")
)
