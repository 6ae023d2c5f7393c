package asmeta

import "errors"

// Sentinel errors. Every error from this package wraps one of them, so
// callers can branch with [errors.Is]. The text is part of the API.
var (
	// ErrInvalidIssuer: the issuer identifier is not an https URL (http is
	// accepted only for loopback hosts), or it has a query, a fragment or
	// userinfo (RFC 8414 §2).
	ErrInvalidIssuer = errors.New("asmeta: invalid issuer identifier")
	// ErrIssuerMismatch: a metadata document names an issuer that is not
	// byte-identical to the one its well-known URL was built from (RFC 8414
	// §3.3, OpenID Connect Discovery 1.0 §4.3). Such a document is never
	// used: it is the authorization-server mix-up attack.
	ErrIssuerMismatch = errors.New("asmeta: issuer mismatch")
	// ErrNotFound: none of the well-known URLs served a usable metadata
	// document (404, other non-200 status, non-JSON media type, invalid
	// JSON or a transport failure).
	ErrNotFound = errors.New("asmeta: metadata not found")
	// ErrInvalidMetadata: the document lacks a member RFC 8414 §2 requires,
	// or a URL member is not https (http only when the issuer itself is a
	// loopback http URL), or carries a fragment or userinfo.
	ErrInvalidMetadata = errors.New("asmeta: invalid metadata")
)
