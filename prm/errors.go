package prm

import "errors"

// Sentinel errors. Errors from this package wrap one of them (errors from
// [Fetch] may also wrap a transport or context error). Their text never
// contains values read from a fetched document.
var (
	// ErrInvalidMetadata: a metadata document breaks a rule of RFC 9728 §2
	// or of MCP (see [Metadata.Validate]), or a fetched body is not a JSON
	// object.
	ErrInvalidMetadata = errors.New("prm: invalid metadata")
	// ErrInvalidResource: a resource identifier passed to [MetadataURL],
	// [RootMetadataURL], [Paths] or [Fetch] is not an absolute http(s) URL
	// of the required form.
	ErrInvalidResource = errors.New("prm: invalid resource identifier")
	// ErrResourceMismatch: a fetched document's "resource" is not identical
	// to the expected resource identifier (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("prm: resource mismatch")
	// ErrFetch: the metadata URL is not https (or loopback http), or the
	// response was not a 200 application/json body within the size cap.
	// Redirects are refused and also reported as ErrFetch.
	ErrFetch = errors.New("prm: fetch failed")
)
