package client

import (
	"strconv"

	"github.com/mcpguard/mcpguard/challenge"
)

// Error is the error of this package: every error it returns is or wraps
// exactly one *Error (and, where noted, the underlying prm, oauth2,
// transport or context error, which errors.Is and errors.As find too).
// Branch on it with [errors.Is] and a target of the same Reason
// (errors.Is(err, &client.Error{Reason: "step_up_loop"})), or with
// [errors.As] to read its data. Its text never contains values received
// from a server; the text is part of the API.
type Error struct {
	// Reason names what failed. The reasons are stable:
	//   - "config": a [Config], [ClientCredentialsConfig], [UpstreamConfig]
	//     or [ExchangeConfig] is missing a required value or holds an
	//     unusable one.
	//   - "step_up_loop": a 403 insufficient_scope challenge asks only for
	//     scopes the transport already requested or holds, or a 401
	//     arrived for a token obtained during the same operation without
	//     asking for any new scope. Re-authorizing cannot help, so the
	//     transport stops at once instead of looping (typescript-sdk#1582).
	//     StatusCode, Challenge and Scopes are set.
	//   - "retries_exhausted": one RoundTrip needed more than
	//     [Config.MaxRetries] re-authorizations, or sent more than
	//     2*MaxRetries+1 requests. StatusCode and Challenge are set.
	//   - "cross_origin": a challenge's resource_metadata URL (RFC 9728
	//     §5.1) is not on the origin of [Config.Resource], and
	//     [Config.DenyCrossOriginMetadata] is set. StatusCode and Challenge
	//     are set.
	//   - "resource_mismatch": the fetched protected-resource metadata
	//     names another resource (RFC 9728 §3.3). The error also wraps
	//     prm.ErrResourceMismatch.
	//   - "metadata": the protected-resource metadata could not be fetched
	//     or is invalid. The error also wraps a "metadata_fetch" Error or
	//     the prm error (prm.ErrInvalidMetadata, ...).
	//   - "metadata_fetch": [FetchMetadata] could not obtain a document:
	//     the URL is not https (or loopback http), the address guard
	//     refused it, the request failed or timed out, or the answer was
	//     not a 200 JSON body within the size cap (a redirect included).
	//     The transport, status or context error is wrapped too.
	//   - "authorize": the [Authorizer] failed, or returned a token source
	//     that yields no usable token. The Authorizer's error is wrapped
	//     too.
	//   - "token_source": the current token source returned an error. The
	//     transport does not re-authorize on its own in that case; the
	//     oauth2 error (often an *oauth2.RetrieveError) is wrapped too.
	//   - "token_exchange": an RFC 8693 token exchange ([ExchangeToken])
	//     failed. When the token endpoint answered with an error response
	//     (RFC 8693 §2.2.2, RFC 6749 §5.2) or another status than 200,
	//     StatusCode is set, and Code, Description and URI hold its
	//     members.
	//   - "dpop": a DPoP key cannot be used or a proof cannot be made.
	Reason string
	// StatusCode is the HTTP status of the challenged response (401 or
	// 403) for "step_up_loop", "retries_exhausted" and "cross_origin", or
	// of the token response for "token_exchange"; 0 otherwise.
	StatusCode int
	// Challenge is the Bearer (or DPoP) challenge the transport refused to
	// act on, for "step_up_loop", "retries_exhausted" and "cross_origin".
	// Its values come from the server and are not verified.
	Challenge challenge.Challenge
	// Scopes is the scope set the transport had requested or would have
	// requested (granted ∪ challenged), in stable order, for
	// "step_up_loop" and "retries_exhausted" found by the step-up check.
	Scopes []string
	// Code is the RFC 6749 §5.2 "error" member of a token exchange error
	// response, e.g. "invalid_target"; "" if the body had none.
	// Description and URI are its "error_description" and "error_uri"
	// members. They come from the server and are not included in Error.
	Code, Description, URI string
}

// Error returns the text of the reason, with the status code when one is
// set ("client: step-up loop: challenge adds no new scope (status 403)").
func (e *Error) Error() string {
	var s string
	switch e.Reason {
	case "config":
		s = "client: invalid configuration"
	case "step_up_loop":
		s = "client: step-up loop: challenge adds no new scope"
	case "retries_exhausted":
		s = "client: step-up retries exhausted"
	case "cross_origin":
		s = "client: resource_metadata on another origin"
	case "resource_mismatch":
		s = "client: protected resource metadata names another resource"
	case "metadata":
		s = "client: protected resource metadata unavailable"
	case "metadata_fetch":
		s = "client: fetching protected resource metadata failed"
	case "authorize":
		s = "client: authorization failed"
	case "token_source":
		s = "client: token source failed"
	case "token_exchange":
		s = "client: token exchange failed"
		if e.StatusCode != 0 {
			return s + ": status " + strconv.Itoa(e.StatusCode)
		}
		return s
	case "dpop":
		s = "client: dpop"
	default:
		s = "client: " + e.Reason
	}
	if e.StatusCode != 0 {
		s += " (status " + strconv.Itoa(e.StatusCode) + ")"
	}
	return s
}

// Is reports whether target is an *Error with the same Reason, so that
// errors.Is(err, &client.Error{Reason: "step_up_loop"}) holds for every
// step-up loop, whatever its status and challenge.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && t.Reason == e.Reason
}

// The package's errors, one per reason, wrapped with detail. The errors
// that carry data are new values of the same Reason.
var (
	errInvalidConfig    = &Error{Reason: "config"}
	errStepUpLoop       = &Error{Reason: "step_up_loop"}
	errRetriesExhausted = &Error{Reason: "retries_exhausted"}
	errCrossOrigin      = &Error{Reason: "cross_origin"}
	errResourceMismatch = &Error{Reason: "resource_mismatch"}
	errMetadata         = &Error{Reason: "metadata"}
	errMetadataFetch    = &Error{Reason: "metadata_fetch"}
	errAuthorize        = &Error{Reason: "authorize"}
	errTokenSource      = &Error{Reason: "token_source"}
	errTokenExchange    = &Error{Reason: "token_exchange"}
	errDPoP             = &Error{Reason: "dpop"}
)

// challengeError returns a new Error of the reason of sentinel, for a
// challenge the transport refused to act on.
func challengeError(sentinel *Error, status int, c challenge.Challenge, scopes []string) error {
	return &Error{Reason: sentinel.Reason, StatusCode: status, Challenge: c, Scopes: scopes}
}
