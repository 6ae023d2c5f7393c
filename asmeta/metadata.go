package asmeta

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

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
	// DPoPSigningAlgValuesSupported lists the JWS algorithms the token
	// endpoint accepts for DPoP proofs (RFC 9449 §5.1); its presence
	// tells clients the server issues DPoP-bound tokens.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// UserinfoEndpoint is the OIDC userinfo endpoint (OIDC Discovery only).
	UserinfoEndpoint string `json:"userinfo_endpoint,omitempty"`
	// IDTokenSigningAlgValuesSupported is an OIDC Discovery member.
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported,omitempty"`
	// SubjectTypesSupported is an OIDC Discovery member.
	SubjectTypesSupported []string `json:"subject_types_supported,omitempty"`
}

// Validate checks m against RFC 8414 §2 for the issuer identifier issuer:
//
//   - issuer is a valid issuer identifier ([ErrInvalidIssuer]) and m.Issuer
//     is byte-identical to it ([ErrIssuerMismatch], §3.3);
//   - response_types_supported is present and non-empty;
//   - authorization_endpoint is present unless grant_types_supported (which
//     defaults to ["authorization_code", "implicit"]) lists neither
//     "authorization_code" nor "implicit";
//   - token_endpoint is present unless "implicit" is the only grant type;
//   - every URL member that is present (authorization, token, jwks,
//     registration, revocation, introspection and userinfo endpoints) is an
//     absolute https URL without fragment or userinfo (RFC 6749 §3.1 and
//     §3.2 require TLS for the endpoints). http is accepted only on loopback
//     hosts and only when the issuer itself is a loopback http URL, so a
//     remote server cannot point a caller at its own loopback interface
//     over plain http.
//
// Everything else wraps [ErrInvalidMetadata]. Validate does not check MCP's
// additional client-side requirements (code_challenge_methods_supported
// containing "S256"); [Discover] applies only the issuer and URL checks, so
// that a resource server that needs nothing but jwks_uri can use an
// otherwise incomplete document.
func (m *Metadata) Validate(issuer string) error {
	if err := m.checkIssuer(issuer); err != nil {
		return err
	}
	if len(m.ResponseTypesSupported) == 0 {
		return fmt.Errorf("%w: response_types_supported is required", ErrInvalidMetadata)
	}
	grants := m.GrantTypesSupported
	if len(grants) == 0 {
		grants = []string{"authorization_code", "implicit"}
	}
	if m.AuthorizationEndpoint == "" && (slices.Contains(grants, "authorization_code") || slices.Contains(grants, "implicit")) {
		return fmt.Errorf("%w: authorization_endpoint is required", ErrInvalidMetadata)
	}
	if m.TokenEndpoint == "" && !(len(grants) == 1 && grants[0] == "implicit") {
		return fmt.Errorf("%w: token_endpoint is required", ErrInvalidMetadata)
	}
	return m.checkURLs(issuer)
}

// checkIssuer validates issuer and compares it byte for byte with m.Issuer.
func (m *Metadata) checkIssuer(issuer string) error {
	if _, err := parseIssuer(issuer); err != nil {
		return err
	}
	if m.Issuer != issuer {
		return fmt.Errorf("%w: document names %s", ErrIssuerMismatch, quote(m.Issuer))
	}
	return nil
}

// checkURLs checks the URL members that are present. issuer must already be
// valid.
func (m *Metadata) checkURLs(issuer string) error {
	u, err := parseIssuer(issuer)
	if err != nil {
		return err
	}
	allowHTTP := u.Scheme == "http"
	for _, f := range []struct{ name, v string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"jwks_uri", m.JWKSURI},
		{"registration_endpoint", m.RegistrationEndpoint},
		{"revocation_endpoint", m.RevocationEndpoint},
		{"introspection_endpoint", m.IntrospectionEndpoint},
		{"userinfo_endpoint", m.UserinfoEndpoint},
	} {
		if f.v == "" {
			continue
		}
		if _, err := fetch.CheckURL(f.v, allowHTTP); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrInvalidMetadata, f.name, err)
		}
	}
	return nil
}

// quote renders an untrusted string for an error message: Go-quoted (so
// control characters cannot forge log lines) and truncated.
func quote(s string) string {
	const limit = 128
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}
