package cimd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Document is OAuth 2.0 client metadata (RFC 7591 §2), as published in a
// Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document-00
// §4), sent in a dynamic registration request, or held by a registered
// [Client].
//
// A Document returned by this package has passed validation and carries
// effective values: TokenEndpointAuthMethod, GrantTypes and ResponseTypes
// are filled with their defaults when the source omitted them.
type Document struct {
	// ClientID is the client identifier. For a Client ID Metadata Document
	// it is the document's URL, byte for byte (draft-00 §4.1).
	ClientID string `json:"client_id"`
	// ClientName is the human-readable name (RFC 7591 §2), at most 256
	// bytes, with no control or bidirectional-formatting characters.
	// Required in a Client ID Metadata Document.
	ClientName string `json:"client_name,omitempty"`
	// RedirectURIs are the registered redirect URIs (RFC 7591 §2), at most
	// 20. Compare with [Client.RedirectURIAllowed].
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	// GrantTypes (RFC 7591 §2). Supported: authorization_code,
	// refresh_token, and client_credentials for clients that authenticate.
	// Defaults to ["authorization_code"].
	GrantTypes []string `json:"grant_types,omitempty"`
	// ResponseTypes (RFC 7591 §2). Only "code" is supported. Defaults to
	// ["code"] when GrantTypes has authorization_code, else [].
	ResponseTypes []string `json:"response_types,omitempty"`
	// TokenEndpointAuthMethod (RFC 7591 §2). Client ID Metadata Documents
	// allow "none" (the default) and "private_key_jwt"; dynamic
	// registration defaults to "client_secret_basic" as RFC 7591 says.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// ApplicationType is "web" or "native" (OpenID Connect Dynamic Client
	// Registration 1.0 §2). It restricts the redirect URIs; see
	// docs/registration.md, "Redirect URI rules".
	ApplicationType string `json:"application_type,omitempty"`
	// Scope is the space-separated scope values the client may request
	// (RFC 7591 §2, RFC 6749 §3.3 syntax), at most 1024 bytes.
	Scope string `json:"scope,omitempty"`
	// Contacts are ways to contact the people responsible for the client.
	Contacts []string `json:"contacts,omitempty"`
	// ClientURI is the client's home page. Never fetched by this package.
	ClientURI string `json:"client_uri,omitempty"`
	// LogoURI is the client's logo. Never fetched by this package (draft-00
	// §6.7 suggests prefetching it yourself, with the same SSRF care).
	LogoURI string `json:"logo_uri,omitempty"`
	// TOSURI is the client's terms of service. Never fetched.
	TOSURI string `json:"tos_uri,omitempty"`
	// PolicyURI is the client's privacy policy. Never fetched.
	PolicyURI string `json:"policy_uri,omitempty"`
	// JWKSURI is where the client publishes its keys for private_key_jwt
	// (RFC 7523). Never fetched by this package. Exclusive with JWKS.
	// JWKSURI and JWKS are accepted only with TokenEndpointAuthMethod
	// private_key_jwt.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// JWKS is the client's JWK Set (RFC 7517 §5) by value, compacted and
	// not HTML-escaped: a JSON object with a "keys" array of at most 16
	// objects. Exclusive with JWKSURI.
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// SoftwareID identifies the client software (RFC 7591 §2).
	SoftwareID string `json:"software_id,omitempty"`
	// SoftwareVersion is the client software's version (RFC 7591 §2).
	SoftwareVersion string `json:"software_version,omitempty"`
}

// Clone returns a deep copy of d.
func (d *Document) clone() *Document {
	c := *d
	c.RedirectURIs = slices.Clone(d.RedirectURIs)
	c.GrantTypes = slices.Clone(d.GrantTypes)
	c.ResponseTypes = slices.Clone(d.ResponseTypes)
	c.Contacts = slices.Clone(d.Contacts)
	c.JWKS = slices.Clone(d.JWKS)
	return &c
}

// Size caps on client metadata members.
const (
	maxNameBytes     = 256
	maxRedirectURIs  = 20
	maxListItems     = 10
	maxScopeBytes    = 1024
	maxJWKSKeys      = 16
	maxAuthMethodLen = 64
)

// parseDocument parses and validates a fetched Client ID Metadata Document
// whose URL is clientID. Errors wrap errClientIDMismatch, or
// errInvalidDocument joined with the precise cause.
func parseDocument(data []byte, clientID string, p policy) (*Document, error) {
	d, err := parseDocumentMembers(data, clientID, p)
	if err != nil && !errors.Is(err, errClientIDMismatch) {
		return nil, fmt.Errorf("%w: %w", errInvalidDocument, err)
	}
	return d, err
}

func parseDocumentMembers(data []byte, clientID string, p policy) (*Document, error) {
	m, err := decodeMembers(data, metadataNames())
	if err != nil {
		return nil, err
	}
	var id string
	if err := m.decode("client_id", &id); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("%w: client_id: required", errInvalidClientMetadata)
	}
	if id != clientID {
		return nil, errClientIDMismatch
	}
	if _, ok := m["client_secret"]; ok {
		return nil, fmt.Errorf("%w: client_secret present", errSharedSecret)
	}
	if _, ok := m["client_secret_expires_at"]; ok {
		return nil, fmt.Errorf("%w: client_secret_expires_at present", errSharedSecret)
	}
	d, err := readMetadata(m)
	if err != nil {
		return nil, err
	}
	d.ClientID = id
	if err := p.validate(d); err != nil {
		return nil, err
	}
	return d, nil
}

// readMetadata reads the RFC 7591 §2 members (except client_id) with their
// JSON types and size caps. Unknown members are ignored (RFC 7591 §2).
func readMetadata(m members) (*Document, error) {
	d := new(Document)
	var err error
	str := func(name string, dst *string, max int) {
		if err == nil {
			*dst, err = m.text(name, max)
		}
	}
	list := func(name string, dst *[]string, maxItems, maxLen int) {
		if err == nil {
			*dst, err = m.texts(name, maxItems, maxLen)
		}
	}
	str("client_name", &d.ClientName, maxNameBytes)
	list("redirect_uris", &d.RedirectURIs, maxRedirectURIs, maxURLBytes)
	list("grant_types", &d.GrantTypes, maxListItems, maxAuthMethodLen*2)
	list("response_types", &d.ResponseTypes, maxListItems, maxAuthMethodLen)
	str("token_endpoint_auth_method", &d.TokenEndpointAuthMethod, maxAuthMethodLen)
	str("application_type", &d.ApplicationType, maxAuthMethodLen)
	str("scope", &d.Scope, maxScopeBytes)
	list("contacts", &d.Contacts, maxListItems, maxNameBytes)
	str("client_uri", &d.ClientURI, maxURLBytes)
	str("logo_uri", &d.LogoURI, maxURLBytes)
	str("tos_uri", &d.TOSURI, maxURLBytes)
	str("policy_uri", &d.PolicyURI, maxURLBytes)
	str("jwks_uri", &d.JWKSURI, maxURLBytes)
	str("software_id", &d.SoftwareID, maxNameBytes)
	str("software_version", &d.SoftwareVersion, maxNameBytes)
	if err != nil {
		return nil, err
	}
	// A present-but-empty list is kept non-nil, so that validation can tell
	// "response_types": [] from an absent member.
	if m.has("response_types") && d.ResponseTypes == nil {
		d.ResponseTypes = []string{}
	}
	if m.has("jwks") {
		if err := checkJWKS(m["jwks"]); err != nil {
			return nil, err
		}
		// The canonical form is compact and not HTML-escaped: never larger
		// than what was sent, and stable through the stores, which do not escape either. (json.Marshal would
		// escape '<', '>' and '&' to six bytes each.)
		compact, err := strictjson.Compact(m["jwks"]) // checked above
		if err != nil {
			return nil, fmt.Errorf("%w: jwks: invalid json", errInvalidClientMetadata)
		}
		d.JWKS = compact
	}
	return d, nil
}

// checkJWKS requires a JSON object whose "keys" member is an array of at
// most maxJWKSKeys objects. The keys themselves are checked by whoever
// verifies private_key_jwt assertions.
func checkJWKS(raw []byte) error {
	m, err := decodeMembers(raw, []string{"keys"})
	if err != nil {
		return fmt.Errorf("%w: jwks: must be a json object without duplicate members", errInvalidClientMetadata)
	}
	keys, ok := strictjson.Elements(m["keys"])
	if !ok || len(keys) == 0 {
		return fmt.Errorf("%w: jwks: keys must be a non-empty array of objects", errInvalidClientMetadata)
	}
	if len(keys) > maxJWKSKeys {
		return fmt.Errorf("%w: jwks: more than %d keys", errInvalidClientMetadata, maxJWKSKeys)
	}
	// A key with a repeated member ("x" twice) could be read differently by
	// different JSON parsers; refuse it like a repeated top-level member.
	for _, k := range keys {
		if _, err := decodeMembers(k, nil); err != nil {
			return fmt.Errorf("%w: jwks: each key must be a json object without duplicate members", errInvalidClientMetadata)
		}
	}
	return nil
}
