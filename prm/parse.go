package prm

import (
	"encoding/json"
	"fmt"
)

// Parse decodes body, a protected-resource metadata response (RFC 9728
// §3.2), on the client side, and applies the checks RFC 9728 §3.3 makes a
// client apply, and no others:
//
//   - body must be one JSON object whose members have the RFC 9728 §2
//     types, read by the project's JSON policy (docs/jose.md): valid
//     UTF-8, no member name repeated in any object, and no top-level
//     name that is a case variant of a member read ("RESOURCE" beside or
//     instead of "resource") or of another name (else
//     [ErrInvalidMetadata]);
//   - its "resource" must be identical to wantResource, with no
//     normalisation (§3.3: the URL the client requested when the metadata
//     URL came from a WWW-Authenticate resource_metadata, or the
//     identifier the well-known URL was built from), else
//     [ErrResourceMismatch];
//   - at least one "authorization_servers" entry must be usable: an
//     absolute https URL (http only on a loopback host) without userinfo,
//     query or fragment. Unusable entries are dropped from the result, so
//     a client never contacts an authorization server over plain http;
//     without any, the document is of no use to a client
//     ([ErrInvalidMetadata]; MCP requires one).
//
// What a server merely SHOULD NOT publish is not a reason to refuse the
// document: "offline_access" in scopes_supported, an unknown
// bearer_methods_supported value, a jwks_uri or documentation URL that
// [Metadata.Validate] would refuse. Such members are returned as they are;
// the caller uses what it understands (the client transport, for example,
// never takes offline_access or an invalid scope token from a server).
// Metadata.Validate remains the server-side check of what a resource
// publishes.
func Parse(body []byte, wantResource string) (*Metadata, error) {
	if wantResource == "" {
		return nil, fmt.Errorf("%w: expected resource is empty", ErrInvalidResource)
	}
	// The project's JSON policy first (checkJSON), so that encoding/json,
	// which matches names case-insensitively and keeps the last of
	// repeated members, can only see the members that were checked.
	if err := checkJSON(body, metadataNames()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
	}
	var m Metadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: a member of the wrong type: %w", ErrInvalidMetadata, err)
	}
	if m.Resource != wantResource {
		return nil, ErrResourceMismatch
	}
	var usable []string
	for _, s := range m.AuthorizationServers {
		if checkURL(s, urlRules{secure: true, noQuery: true}) == nil {
			usable = append(usable, s)
		}
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("%w: authorization_servers: no usable https URL", ErrInvalidMetadata)
	}
	m.AuthorizationServers = usable
	return &m, nil
}
