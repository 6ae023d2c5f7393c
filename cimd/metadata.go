package cimd

import (
	"slices"

	"github.com/mcpguard/mcpguard/asmeta"
)

// ServerMetadataConfig configures [ServerMetadata].
type ServerMetadataConfig struct {
	// Issuer is the authorization server's issuer identifier, published
	// byte-identical to the base of its well-known URL (RFC 8414 §3.3).
	Issuer string
	// AuthorizationEndpoint and TokenEndpoint are the endpoint URLs.
	AuthorizationEndpoint string
	TokenEndpoint         string
	// JWKSURI, RevocationEndpoint and IntrospectionEndpoint are published
	// when set.
	JWKSURI               string
	RevocationEndpoint    string
	IntrospectionEndpoint string
	// CIMD advertises client_id_metadata_document_supported (draft-00 §5).
	// Set it when a [Resolver] is in the [Registry].
	CIMD bool
	// RegistrationEndpoint is the URL of the [DCRHandler]. Empty means
	// dynamic registration is off, and registration_endpoint is omitted.
	RegistrationEndpoint string
	// ScopesSupported is published as scopes_supported. List
	// offline_access here (not in protected resource metadata) if you issue
	// refresh tokens for it.
	ScopesSupported []string
	// GrantTypes is published as grant_types_supported. Nil means
	// authorization_code and refresh_token.
	GrantTypes []string
	// TokenEndpointAuthMethods is published as
	// token_endpoint_auth_methods_supported. Nil derives it: "none", plus
	// client_secret_basic and client_secret_post when registration is on.
	// "private_key_jwt" is never derived, because this package does not
	// verify client assertions: list it only if your token endpoint does.
	// Set it to [DCRHandler.AuthMethods] (plus whatever static clients use)
	// when the handler is restricted.
	TokenEndpointAuthMethods []string
	// TokenEndpointAuthSigningAlgs is published when private_key_jwt is
	// listed (RFC 8414 §2 requires it then). Nil means RS256 and ES256;
	// your token endpoint must verify what you publish.
	TokenEndpointAuthSigningAlgs []string
}

// ServerMetadata returns RFC 8414 authorization server metadata for an
// authorization server using this package, with what MCP clients check:
// code_challenge_methods_supported ["S256"] (PKCE; clients refuse to
// proceed without it), response_types_supported ["code"],
// authorization_response_iss_parameter_supported (RFC 9207; the server
// must then send "iss" in authorization responses),
// client_id_metadata_document_supported when CIMD is on, and
// registration_endpoint only when dynamic registration is on.
func ServerMetadata(cfg ServerMetadataConfig) asmeta.Metadata {
	methods := slices.Clone(cfg.TokenEndpointAuthMethods)
	if methods == nil {
		methods = []string{authMethodNone}
		if cfg.RegistrationEndpoint != "" {
			methods = append(methods, authMethodClientSecretBasic, authMethodClientSecretPost)
		}
	}
	grants := slices.Clone(cfg.GrantTypes)
	if grants == nil {
		grants = []string{grantAuthorizationCode, grantRefreshToken}
	}
	m := asmeta.Metadata{
		Issuer:                                     cfg.Issuer,
		AuthorizationEndpoint:                      cfg.AuthorizationEndpoint,
		TokenEndpoint:                              cfg.TokenEndpoint,
		JWKSURI:                                    cfg.JWKSURI,
		RegistrationEndpoint:                       cfg.RegistrationEndpoint,
		RevocationEndpoint:                         cfg.RevocationEndpoint,
		IntrospectionEndpoint:                      cfg.IntrospectionEndpoint,
		ScopesSupported:                            slices.Clone(cfg.ScopesSupported),
		ResponseTypesSupported:                     []string{responseCode},
		GrantTypesSupported:                        grants,
		TokenEndpointAuthMethodsSupported:          methods,
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseISSParameterSupported: true,
		ClientIDMetadataDocumentSupported:          cfg.CIMD,
	}
	if slices.Contains(methods, authMethodPrivateKeyJWT) {
		m.TokenEndpointAuthSigningAlgValuesSupported = slices.Clone(cfg.TokenEndpointAuthSigningAlgs)
		if m.TokenEndpointAuthSigningAlgValuesSupported == nil {
			m.TokenEndpointAuthSigningAlgValuesSupported = []string{"RS256", "ES256"}
		}
	}
	return m
}
