package cimd

import "errors"

// Sentinel errors. Every error the package returns wraps at least one of
// them, so callers can branch with [errors.Is]. They are for logs and
// metrics: never show them to the party that sent the client_id or the
// registration request. [OAuthError] gives the external answer for a
// lookup failure; [DCRHandler] writes its own RFC 7591 §3.2.2 answers.
// Error text never quotes values taken from a fetched document or a
// request body. The text is part of the API.
var (
	// ErrNotClientIDURL: the client_id is not a URL a Client ID Metadata
	// Document may live at (draft-ietf-oauth-client-id-metadata-document-00
	// §3): not https, no path, a fragment, userinfo, a dot segment, a query
	// (unless allowed) or characters outside printable ASCII. Checked before
	// any network I/O.
	ErrNotClientIDURL = errors.New("cimd: not a client id metadata document url")
	// ErrForbiddenAddress: the SSRF guard refused the address being dialled
	// (loopback, private, link-local, shared, multicast, documentation,
	// cloud metadata, IPv4-mapped, NAT64, 6to4, … or a port that is not
	// allowed). It also matches the internal fetch package's sentinel.
	ErrForbiddenAddress = errors.New("cimd: forbidden address")
	// ErrFetch: the document could not be fetched: DNS, dial, TLS, reset,
	// deadline (the whole fetch, body included, is bounded by
	// ResolverConfig.Timeout) or the caller's context.
	ErrFetch = errors.New("cimd: fetch failed")
	// ErrStatus: the response status was not 200. Redirects are refused
	// with this error and never followed.
	ErrStatus = errors.New("cimd: unexpected status")
	// ErrContentType: the response media type is not JSON.
	ErrContentType = errors.New("cimd: unexpected content type")
	// ErrTooLarge: the body, after decompression, exceeds the size cap
	// (ResolverConfig.MaxBytes, DCRConfig.MaxBodyBytes).
	ErrTooLarge = errors.New("cimd: document too large")
	// ErrRateLimited: a fetch was refused by the global or per-host rate
	// limit, or no fetch slot (ResolverConfig.MaxConcurrentFetches) freed up
	// before the deadline.
	ErrRateLimited = errors.New("cimd: rate limited")
	// ErrClientIDMismatch: the document's client_id is not byte-for-byte
	// the URL it was fetched from (draft-00 §4.1, RFC 3986 §6.2.1 simple
	// string comparison).
	ErrClientIDMismatch = errors.New("cimd: client_id does not match document url")
	// ErrInvalidDocument: the fetched document is not a valid client
	// metadata document. It is always joined by a more precise sentinel:
	// [ErrMalformed], [ErrDuplicateMember], [ErrInvalidClientMetadata],
	// [ErrInvalidRedirectURI] or [ErrSharedSecret].
	ErrInvalidDocument = errors.New("cimd: invalid client metadata document")
	// ErrMalformed: the bytes are not exactly one JSON object.
	ErrMalformed = errors.New("cimd: malformed json")
	// ErrDuplicateMember: a top-level JSON member name occurs twice.
	ErrDuplicateMember = errors.New("cimd: duplicate json member")
	// ErrInvalidClientMetadata: a client metadata member (RFC 7591 §2) is
	// missing, of the wrong JSON type, too long, or has a value this
	// package refuses. The message names the member, never its value.
	ErrInvalidClientMetadata = errors.New("cimd: invalid client metadata")
	// ErrInvalidRedirectURI: a redirect URI breaks the redirect URI rules
	// (see [RedirectURIAllowed] and the README section for authorization-server authors).
	ErrInvalidRedirectURI = errors.New("cimd: invalid redirect uri")
	// ErrSharedSecret: a Client ID Metadata Document carries client_secret
	// or client_secret_expires_at, or names a shared-secret
	// token_endpoint_auth_method (draft-00 §4.1).
	ErrSharedSecret = errors.New("cimd: shared secrets not allowed")
	// ErrUnknownClient: [Registry.Lookup] found no such client (or the
	// source that would hold it is turned off). A [Store] returns an error
	// wrapping it for an unknown id.
	ErrUnknownClient = errors.New("cimd: unknown client")
	// ErrInvalidSecret: client authentication with a secret failed: wrong
	// secret, or the client has none.
	ErrInvalidSecret = errors.New("cimd: invalid client secret")
	// ErrSecretExpired: the client secret's client_secret_expires_at has
	// passed (RFC 7591 §3.2.1).
	ErrSecretExpired = errors.New("cimd: client secret expired")
	// ErrRecordTooLarge: boltstore.Store.Put or [MemoryStore.Put] refused a
	// client whose stored form ([Client.MarshalJSON]) exceeds
	// [MaxRecordBytes]. [DCRHandler] answers it with 400
	// invalid_client_metadata.
	ErrRecordTooLarge = errors.New("cimd: client record too large")
	// ErrConfig: a Config passed to a constructor is invalid.
	ErrConfig = errors.New("cimd: invalid config")
)

// ExternalErrorCode and ExternalErrorDescription are the only answer an
// authorization server should give for a client it could not look up or
// authenticate (RFC 6749 §5.2 "invalid_client"). The text is fixed so that
// it cannot act as an oracle for scanning internal hosts through
// client_id URLs.
const (
	ExternalErrorCode        = "invalid_client"
	ExternalErrorDescription = "the client is unknown or its metadata could not be used"
)

// OAuthError maps any error from [Resolver.Resolve], [Registry.Lookup] or
// [Registry.VerifySecret] to the OAuth error code and description to show
// externally: always [ExternalErrorCode] and [ExternalErrorDescription] for
// a non-nil err, and empty strings for nil. Log err itself.
//
// At the authorization endpoint, a client_id that fails must not lead to a
// redirect (RFC 6749 §4.1.2.1): show the error to the user instead.
func OAuthError(err error) (code, description string) {
	if err == nil {
		return "", ""
	}
	return ExternalErrorCode, ExternalErrorDescription
}
