package cimd

import "errors"

// Error is the error of a client lookup, a resolution, a secret check or a
// constructor: every error the package returns wraps one, except those
// wrapping [ErrUnknownClient] or [ErrRecordTooLarge]. Find it with
// [errors.As] and branch, count or log by its Reason. Errors are for logs
// and metrics: never show them to the party that sent the client_id or
// the registration request. Answer a failed lookup or authentication with
// OAuth "invalid_client" and one fixed description, whatever the error
// (RFC 6749 §5.2), so that the answer cannot act as an oracle for
// scanning internal hosts through client_id URLs, and do not redirect
// from the authorization endpoint (RFC 6749 §4.1.2.1). [DCRHandler]
// writes its own RFC 7591 §3.2.2 answers. Error text never quotes values
// taken from a fetched document or a request body. The text is part of
// the API.
type Error struct {
	// Reason is a short, stable token naming the check that failed:
	//
	//   - "not_client_id_url": the client_id is not a URL a Client ID
	//     Metadata Document may live at
	//     (draft-ietf-oauth-client-id-metadata-document-00 §3): not https,
	//     no path, a fragment, userinfo, a dot segment, a query (unless
	//     allowed) or characters outside printable ASCII. Checked before
	//     any network I/O.
	//   - "forbidden_address": the SSRF guard refused the address being
	//     dialled (loopback, private, link-local, shared, multicast,
	//     documentation, cloud metadata, IPv4-mapped, NAT64, 6to4, … or a
	//     port that is not allowed). The error also matches the internal
	//     fetch package's sentinel.
	//   - "fetch": the document could not be fetched: DNS, dial, TLS,
	//     reset, deadline (the whole fetch, body included, is bounded by
	//     ResolverConfig.Timeout) or the caller's context.
	//   - "status": the response status was not 200. Redirects are
	//     refused with this reason and never followed.
	//   - "content_type": the response media type is not JSON.
	//   - "too_large": the body, after decompression, exceeds the size cap
	//     (ResolverConfig.MaxBytes, DCRConfig.MaxBodyBytes).
	//   - "rate_limited": a fetch was refused by the global or per-host
	//     rate limit, or no fetch slot (ResolverConfig.MaxConcurrentFetches)
	//     freed up before the deadline.
	//   - "client_id_mismatch": the document's client_id is not byte for
	//     byte the URL it was fetched from (draft-00 §4.1, RFC 3986 §6.2.1
	//     simple string comparison).
	//   - "malformed": the document is not exactly one JSON object.
	//   - "duplicate_member": a top-level JSON member name occurs twice.
	//   - "invalid_client_metadata": a client metadata member (RFC 7591
	//     §2) is missing, of the wrong JSON type, too long, or has a value
	//     this package refuses. The message names the member, never its
	//     value.
	//   - "invalid_redirect_uri": a redirect URI breaks the redirect URI
	//     rules (docs/registration.md, "Redirect URI rules").
	//   - "shared_secret": a Client ID Metadata Document carries
	//     client_secret or client_secret_expires_at, or names a
	//     shared-secret token_endpoint_auth_method (draft-00 §4.1).
	//   - "invalid_secret": client authentication with a secret failed:
	//     wrong secret, or the client has none.
	//   - "secret_expired": the client secret's client_secret_expires_at
	//     has passed (RFC 7591 §3.2.1).
	//   - "config": a Config passed to a constructor is invalid.
	//
	// The five document reasons from "malformed" to "shared_secret" mean
	// that the fetched document is not a valid client metadata document;
	// the message then starts "cimd: invalid client metadata document".
	Reason string

	text string
}

// Error returns the message: "cimd: " and the check that failed.
func (e *Error) Error() string { return e.text }

// The package's errors, one per reason.
var (
	errNotClientIDURL        = &Error{"not_client_id_url", "cimd: not a client id metadata document url"}
	errForbiddenAddress      = &Error{"forbidden_address", "cimd: forbidden address"}
	errFetch                 = &Error{"fetch", "cimd: fetch failed"}
	errStatus                = &Error{"status", "cimd: unexpected status"}
	errContentType           = &Error{"content_type", "cimd: unexpected content type"}
	errTooLarge              = &Error{"too_large", "cimd: document too large"}
	errRateLimited           = &Error{"rate_limited", "cimd: rate limited"}
	errClientIDMismatch      = &Error{"client_id_mismatch", "cimd: client_id does not match document url"}
	errMalformed             = &Error{"malformed", "cimd: malformed json"}
	errDuplicateMember       = &Error{"duplicate_member", "cimd: duplicate json member"}
	errInvalidClientMetadata = &Error{"invalid_client_metadata", "cimd: invalid client metadata"}
	errInvalidRedirectURI    = &Error{"invalid_redirect_uri", "cimd: invalid redirect uri"}
	errSharedSecret          = &Error{"shared_secret", "cimd: shared secrets not allowed"}
	errInvalidSecret         = &Error{"invalid_secret", "cimd: invalid client secret"}
	errSecretExpired         = &Error{"secret_expired", "cimd: client secret expired"}
	errConfig                = &Error{"config", "cimd: invalid config"}
)

// errInvalidDocument prefixes the message of a document that is not a
// valid client metadata document; the precise *Error follows it.
var errInvalidDocument = errors.New("cimd: invalid client metadata document")

// Sentinels a [Store] implementation returns, and [Registry.Lookup] and
// [Registry.VerifySecret] pass on.
var (
	// ErrUnknownClient: [Registry.Lookup] found no such client (or the
	// source that would hold it is turned off). A [Store] returns an error
	// wrapping it for an unknown id.
	ErrUnknownClient = errors.New("cimd: unknown client")
	// ErrRecordTooLarge: a [Store]'s Put refused a client whose stored
	// form (its JSON, not HTML-escaped) exceeds 32 KiB. [DCRHandler]
	// answers it with 400 invalid_client_metadata.
	ErrRecordTooLarge = errors.New("cimd: client record too large")
)
