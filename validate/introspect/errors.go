package introspect

import "errors"

// Sentinel errors of this package. Every error returned by
// [Introspector.Validate] wraps a sentinel of package validate, so that
// middleware maps it to an HTTP answer (see the package documentation);
// failures of the endpoint additionally wrap [ErrEndpoint] or
// [ErrClientAuth], for logs and tests. Error text never contains the token
// or a value read from the response. The text is part of the API.
var (
	// ErrConfig: [New] or [NewHybrid] was given an unusable configuration.
	ErrConfig = errors.New("introspect: invalid config")
	// ErrEndpoint: the introspection endpoint could not be reached or did
	// not answer 200 with a JSON body within Config.Timeout and
	// Config.MaxBytes (transport error, timeout, 3xx, 429, 5xx, any other
	// status but 400/401/403/413, wrong media type, oversized body), or its URL
	// could not be discovered. Always wrapped together with
	// [validate.ErrKeysUnavailable]: the token was not judged.
	ErrEndpoint = errors.New("introspect: endpoint unavailable")
	// ErrClientAuth: the endpoint answered 401 or 403 (or 400 with
	// invalid_client or unauthorized_client), refusing this
	// resource server's own client authentication (RFC 7662 §2.1), or that
	// authentication could not be produced (the TokenSource of
	// "bearer" failed, or signing the client assertion of
	// "private_key_jwt" failed). That is a misconfiguration or an outage on
	// our side, not a bad token: it is logged at Error level and wrapped
	// together with [validate.ErrKeysUnavailable].
	ErrClientAuth = errors.New("introspect: client authentication rejected")
	// ErrRefused: the endpoint answered HTTP 400 about the token itself
	// (RFC 7662 §2.3, RFC 6749 §5.2: invalid_request,
	// unsupported_token_type, or no error code), for instance for a token
	// that is not one of its own, or 413 for a token larger than it
	// accepts. The caller chose the token, so this is
	// a refusal of the token, never an outage: it is wrapped together with
	// [validate.Error] "inactive" (401 invalid_token) and logged at Debug level
	// only. A 400 with invalid_client or unauthorized_client blames our
	// credentials instead and is [ErrClientAuth].
	ErrRefused = errors.New("introspect: endpoint refused the token")
)
