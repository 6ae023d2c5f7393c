package fetch

import (
	"errors"
	"strconv"
	"time"
)

// Sentinel errors; every error from this package wraps one of them.
var (
	// ErrInsecureURL: the URL is not absolute https (or http on a loopback
	// host where that is allowed), or carries userinfo or a fragment.
	ErrInsecureURL = errors.New("fetch: insecure or invalid url")
	// ErrForbiddenAddress: the SSRF guard refused the address being dialled.
	ErrForbiddenAddress = errors.New("fetch: forbidden address")
	// ErrStatus: the response status was not 200. See [StatusError].
	ErrStatus = errors.New("fetch: unexpected status")
	// ErrContentType: the response media type is not JSON.
	ErrContentType = errors.New("fetch: unexpected content type")
	// ErrTooLarge: the (decompressed) body exceeded the cap.
	ErrTooLarge = errors.New("fetch: body too large")
	// ErrDecode: the body is not valid JSON for the target type (callers
	// that read a fetched body wrap their decoding error with it).
	ErrDecode = errors.New("fetch: invalid json")
	// ErrTransport: the request failed below HTTP (dial, TLS, timeout,
	// reset, refused redirect).
	ErrTransport = errors.New("fetch: transport error")
)

// StatusError reports a non-200 answer. It matches [ErrStatus] with
// [errors.Is].
type StatusError struct {
	// Code is the HTTP status code received.
	Code int
	// RetryAfter is the parsed Retry-After delay (seconds form only); zero
	// when absent or unparsable.
	RetryAfter time.Duration
	// Body is the response body of a 4xx answer with a JSON media type
	// (an OAuth 2.0 error response, RFC 6749 §5.2), when it fits in
	// [MaxErrorBodyBytes]; nil otherwise. It is untrusted and unparsed.
	Body []byte
}

// MaxErrorBodyBytes caps [StatusError.Body].
const MaxErrorBodyBytes = 4 << 10

func (e *StatusError) Error() string {
	return "fetch: unexpected status " + strconv.Itoa(e.Code)
}

// Unwrap makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Unwrap() error { return ErrStatus }
