package fetch

// The body caps of the metadata documents this module fetches, shared by
// the packages that fetch them and by mcpguard audit, which judges them.
const (
	// MaxResourceMetadataBytes caps a protected-resource metadata document
	// (RFC 9728): 64 KiB.
	MaxResourceMetadataBytes = 64 << 10
	// MaxServerMetadataBytes caps an authorization-server metadata
	// document (RFC 8414, OpenID Connect Discovery), decompressed: 256 KiB.
	MaxServerMetadataBytes = 256 << 10
)
