package client

import (
	"errors"
	"strconv"

	"github.com/mcpguard/mcpguard/challenge"
)

// Sentinel errors. Errors returned by this package wrap one of them (and,
// where noted, the underlying prm, oauth2, transport or context error).
// Their text never contains values received from a server.
var (
	// ErrInvalidConfig: a [Config], [UpstreamConfig] or [ExchangeConfig]
	// is missing a required value or holds an unusable one.
	ErrInvalidConfig = errors.New("client: invalid configuration")
	// ErrStepUpLoop: a 403 insufficient_scope challenge asks only for
	// scopes the transport already requested or holds, or a 401 arrived
	// for a token obtained during the same operation without asking for
	// any new scope. Re-authorizing cannot help, so the transport stops
	// at once instead of looping (typescript-sdk#1582). The error is a
	// [*ChallengeError].
	ErrStepUpLoop = errors.New("client: step-up loop: challenge adds no new scope")
	// ErrRetriesExhausted: one RoundTrip needed more than
	// [Config.MaxRetries] re-authorizations, or sent more than
	// 2*MaxRetries+1 requests. The error is a [*ChallengeError].
	ErrRetriesExhausted = errors.New("client: step-up retries exhausted")
	// ErrCrossOrigin: a challenge's resource_metadata URL (RFC 9728 §5.1)
	// is not on the origin of [Config.Resource], and
	// [Config.DenyCrossOriginMetadata] is set. The error is a
	// [*ChallengeError].
	ErrCrossOrigin = errors.New("client: resource_metadata on another origin")
	// ErrResourceMismatch: the fetched protected-resource metadata names
	// another resource (RFC 9728 §3.3). Errors wrapping it also wrap
	// prm.ErrResourceMismatch.
	ErrResourceMismatch = errors.New("client: protected resource metadata names another resource")
	// ErrMetadata: the protected-resource metadata could not be fetched or
	// is invalid. The error also wraps [ErrMetadataFetch] or the prm error
	// (prm.ErrInvalidMetadata, ...).
	ErrMetadata = errors.New("client: protected resource metadata unavailable")
	// ErrMetadataFetch: [FetchMetadata] could not obtain a document: the
	// URL is not https (or loopback http), the address guard refused it,
	// the request failed or timed out, or the answer was not a 200 JSON
	// body within the size cap (a redirect included). The transport,
	// status or context error is wrapped too.
	ErrMetadataFetch = errors.New("client: fetching protected resource metadata failed")
	// ErrAuthorize: the [Authorizer] failed, or returned a token source
	// that yields no usable token. The Authorizer's error is wrapped too.
	ErrAuthorize = errors.New("client: authorization failed")
	// ErrTokenSource: the current token source returned an error. The
	// transport does not re-authorize on its own in that case; the
	// oauth2 error (often an *oauth2.RetrieveError) is wrapped too.
	ErrTokenSource = errors.New("client: token source failed")
	// ErrTokenExchange: an RFC 8693 token exchange failed. Failures
	// reported by the authorization server are an [*ExchangeError].
	ErrTokenExchange = errors.New("client: token exchange failed")
)

// ChallengeError reports a challenge the transport refused to act on
// ([ErrStepUpLoop], [ErrRetriesExhausted], [ErrCrossOrigin]). It carries
// the parsed challenge so that callers can tell the user which scopes the
// server wanted. The response body was drained and closed.
//
// The challenge values come from the server and are not verified; Error
// never includes them.
type ChallengeError struct {
	// StatusCode is the HTTP status of the challenged response (401 or 403).
	StatusCode int
	// Challenge is the Bearer challenge the transport acted upon.
	Challenge challenge.Challenge
	// Scopes is the scope set the transport had requested or would have
	// requested (granted ∪ challenged), in stable order.
	Scopes []string
	// Err is the sentinel: ErrStepUpLoop, ErrRetriesExhausted or
	// ErrCrossOrigin.
	Err error
}

// Error returns the sentinel text and the status code.
func (e *ChallengeError) Error() string {
	return e.Err.Error() + " (status " + strconv.Itoa(e.StatusCode) + ")"
}

// Unwrap returns the sentinel, so errors.Is(err, ErrStepUpLoop) works.
func (e *ChallengeError) Unwrap() error { return e.Err }

// ExchangeError is an RFC 8693 §2.2.2 / RFC 6749 §5.2 error response from a
// token endpoint, or a non-200 status without one. It matches
// [ErrTokenExchange] with errors.Is. Code and Description come from the
// server and are not included in Error.
type ExchangeError struct {
	// StatusCode is the HTTP status of the token response.
	StatusCode int
	// Code is the RFC 6749 §5.2 "error" member, e.g. "invalid_target";
	// "" if the body had none.
	Code string
	// Description is the "error_description" member, if any.
	Description string
	// URI is the "error_uri" member, if any.
	URI string
}

// Error returns a fixed text with the status code.
func (e *ExchangeError) Error() string {
	return ErrTokenExchange.Error() + ": status " + strconv.Itoa(e.StatusCode)
}

// Unwrap returns [ErrTokenExchange].
func (e *ExchangeError) Unwrap() error { return ErrTokenExchange }
