package asmeta

// Metadata is OAuth 2.0 Authorization Server Metadata (RFC 8414 §2), with
// the OpenID Connect Discovery and MCP members a resource server or client
// needs. Unknown members are ignored when decoding.
type Metadata struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414 §2,
	// REQUIRED). A discovered document is used only when this equals the
	// issuer the well-known URL was built from, byte for byte (§3.3).
	Issuer string `json:"issuer"`
	// AuthorizationEndpoint is the URL of the authorization endpoint.
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	// TokenEndpoint is the URL of the token endpoint.
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// JWKSURI is the URL of the JWK Set (RFC 7517) holding the signing keys.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// RegistrationEndpoint is the RFC 7591 dynamic registration endpoint.
	// MCP 2026-07-28 deprecates dynamic registration.
	RegistrationEndpoint string `json:"registration_endpoint,omitempty"`
	// ScopesSupported lists the scopes the server supports.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ResponseTypesSupported lists the OAuth response_type values (REQUIRED).
	ResponseTypesSupported []string `json:"response_types_supported,omitempty"`
	// ResponseModesSupported lists the response_mode values.
	ResponseModesSupported []string `json:"response_modes_supported,omitempty"`
	// GrantTypesSupported lists the grant types.
	GrantTypesSupported []string `json:"grant_types_supported,omitempty"`
	// TokenEndpointAuthMethodsSupported lists client authentication methods
	// at the token endpoint.
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	// TokenEndpointAuthSigningAlgValuesSupported lists JWS algorithms for
	// private_key_jwt and client_secret_jwt.
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	// ServiceDocumentation is a human-readable documentation URL.
	ServiceDocumentation string `json:"service_documentation,omitempty"`
	// RevocationEndpoint is the RFC 7009 revocation endpoint.
	RevocationEndpoint string `json:"revocation_endpoint,omitempty"`
	// IntrospectionEndpoint is the RFC 7662 introspection endpoint.
	IntrospectionEndpoint string `json:"introspection_endpoint,omitempty"`
	// IntrospectionEndpointAuthMethodsSupported lists client authentication
	// methods at the introspection endpoint.
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported,omitempty"`
	// CodeChallengeMethodsSupported lists PKCE methods (RFC 7636). MCP
	// clients refuse to proceed when it is absent; it must contain "S256".
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported,omitempty"`
	// AuthorizationResponseISSParameterSupported advertises RFC 9207 "iss"
	// in authorization responses (MCP 2026-07-28 requires it when sent).
	AuthorizationResponseISSParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	// ClientIDMetadataDocumentSupported advertises Client ID Metadata
	// Documents (draft-ietf-oauth-client-id-metadata-document-00 §5).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// UserinfoEndpoint is the OIDC userinfo endpoint (OIDC Discovery only).
	UserinfoEndpoint string `json:"userinfo_endpoint,omitempty"`
	// IDTokenSigningAlgValuesSupported is an OIDC Discovery member.
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported,omitempty"`
	// SubjectTypesSupported is an OIDC Discovery member.
	SubjectTypesSupported []string `json:"subject_types_supported,omitempty"`
}
