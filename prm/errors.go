package prm

import "errors"

// Sentinel errors. Errors from this package wrap one of them. Their text
// never contains values read from a fetched document.
var (
	// ErrInvalidMetadata: a metadata document breaks a rule of RFC 9728 §2
	// or of MCP (see [Metadata.Validate]), or a fetched body is not a JSON
	// object.
	ErrInvalidMetadata = errors.New("prm: invalid metadata")
	// ErrInvalidResource: a resource identifier passed to [MetadataURL],
	// [Paths] or [Parse] is not an absolute http(s) URL of the required
	// form.
	ErrInvalidResource = errors.New("prm: invalid resource identifier")
	// ErrResourceMismatch: a fetched document's "resource" is not identical
	// to the expected resource identifier (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("prm: resource mismatch")
)
