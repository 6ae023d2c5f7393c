package cimd

import (
	"fmt"
	"slices"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// Token endpoint authentication methods (RFC 7591 §2, RFC 7523 §2.2).
const (
	// authMethodNone: a public client (OAuth 2.1), which must use PKCE.
	authMethodNone = "none"
	// authMethodPrivateKeyJWT: a JWT assertion signed with a key from the
	// client's jwks or jwks_uri (RFC 7523, OpenID Connect Core §9).
	authMethodPrivateKeyJWT = "private_key_jwt"
	// authMethodClientSecretBasic: an issued secret in HTTP Basic
	// authentication (RFC 6749 §2.3.1). Dynamic registration only.
	authMethodClientSecretBasic = "client_secret_basic"
	// authMethodClientSecretPost: an issued secret in the request body
	// (RFC 6749 §2.3.1). Dynamic registration only.
	authMethodClientSecretPost = "client_secret_post"
)

// Grant and response types this package registers.
const (
	grantAuthorizationCode = "authorization_code"
	grantRefreshToken      = "refresh_token"
	grantClientCredentials = "client_credentials"
	// grantJWTBearer is the RFC 7523 §2.1 JWT bearer grant (an ID-JAG of
	// MCP Enterprise-Managed Authorization; devas redeems it).
	grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	responseCode   = "code"
)

// policy is the rule set one source of client metadata is checked against.
type policy struct {
	// cimd applies Client ID Metadata Document rules: client_name and
	// redirect_uris required, shared-secret methods are errSharedSecret.
	cimd bool
	// defaultAppType replaces an absent application_type; "" leaves it
	// absent, which applies no type-specific redirect URI restriction.
	defaultAppType string
	// defaultAuthMethod replaces an absent token_endpoint_auth_method.
	defaultAuthMethod string
	// authMethods are the allowed token_endpoint_auth_method values.
	authMethods []string
	// allowPrivateUse admits reverse-domain private-use redirect schemes.
	allowPrivateUse bool
}

func cimdPolicy(allowPrivateUse bool) policy {
	return policy{
		cimd:              true,
		defaultAuthMethod: authMethodNone,
		authMethods:       []string{authMethodNone, authMethodPrivateKeyJWT},
		allowPrivateUse:   allowPrivateUse,
	}
}

func isSharedSecretMethod(m string) bool {
	return m == authMethodClientSecretBasic || m == authMethodClientSecretPost || m == "client_secret_jwt"
}

// validate checks the semantics of d and fills effective defaults. Errors
// wrap errInvalidClientMetadata, errInvalidRedirectURI or errSharedSecret.
func (p policy) validate(d *Document) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errInvalidClientMetadata}, args...)...)
	}
	if p.cimd && d.ClientName == "" {
		return bad("client_name: required")
	}

	if d.TokenEndpointAuthMethod == "" {
		d.TokenEndpointAuthMethod = p.defaultAuthMethod
	}
	method := d.TokenEndpointAuthMethod
	if p.cimd && isSharedSecretMethod(method) {
		return fmt.Errorf("%w: token_endpoint_auth_method is a shared-secret method", errSharedSecret)
	}
	if !slices.Contains(p.authMethods, method) {
		return bad("token_endpoint_auth_method: not supported")
	}
	if d.JWKSURI != "" && d.JWKS != nil {
		return bad("jwks and jwks_uri are mutually exclusive")
	}
	// Keys serve only to verify private_key_jwt assertions here. RFC 7591
	// §2 allows them with any method, but accepting them from a public
	// client would let an unauthenticated caller park a request body of
	// key material in the store.
	if (d.JWKSURI != "" || d.JWKS != nil) && method != authMethodPrivateKeyJWT {
		return bad("jwks and jwks_uri are accepted only with private_key_jwt")
	}
	if method == authMethodPrivateKeyJWT && d.JWKSURI == "" && d.JWKS == nil {
		return bad("private_key_jwt needs jwks or jwks_uri")
	}

	if err := p.validateGrants(d); err != nil {
		return err
	}

	switch d.ApplicationType {
	case "":
		d.ApplicationType = p.defaultAppType
	case appTypeWeb, appTypeNative:
	default:
		return bad("application_type: must be web or native")
	}
	if len(d.RedirectURIs) == 0 && (p.cimd || slices.Contains(d.GrantTypes, grantAuthorizationCode)) {
		return fmt.Errorf("%w: redirect_uris: required", errInvalidRedirectURI)
	}
	for _, u := range d.RedirectURIs {
		if err := checkRedirectURI(u, d.ApplicationType, p.allowPrivateUse); err != nil {
			return err
		}
	}

	for _, u := range []struct{ name, v string }{
		{"client_uri", d.ClientURI}, {"logo_uri", d.LogoURI}, {"tos_uri", d.TOSURI},
		{"policy_uri", d.PolicyURI}, {"jwks_uri", d.JWKSURI},
	} {
		if u.v != "" {
			if err := checkHTTPSURL(u.name, u.v); err != nil {
				return err
			}
		}
	}
	if d.Scope != "" && !validScope(d.Scope) {
		return bad("scope: invalid syntax")
	}
	return nil
}

// validateGrants checks grant_types and response_types and their
// consistency (RFC 7591 §2.1): authorization_code if and only if "code".
func (p policy) validateGrants(d *Document) error {
	bad := func(format string) error { return fmt.Errorf("%w: "+format, errInvalidClientMetadata) }
	if len(d.GrantTypes) == 0 {
		d.GrantTypes = []string{grantAuthorizationCode}
	}
	for _, g := range d.GrantTypes {
		switch g {
		case grantAuthorizationCode, grantRefreshToken, grantJWTBearer:
		case grantClientCredentials:
			if d.TokenEndpointAuthMethod == authMethodNone {
				return bad("grant_types: client_credentials needs client authentication")
			}
		case "implicit", "password":
			return bad("grant_types: implicit and password grants are not allowed")
		default:
			return bad("grant_types: unsupported grant type")
		}
	}
	code := slices.Contains(d.GrantTypes, grantAuthorizationCode)
	if d.ResponseTypes == nil {
		d.ResponseTypes = []string{}
		if code {
			d.ResponseTypes = []string{responseCode}
		}
	}
	for _, r := range d.ResponseTypes {
		if r != responseCode {
			return bad("response_types: only code is supported")
		}
	}
	if code != slices.Contains(d.ResponseTypes, responseCode) {
		return bad("grant_types and response_types are inconsistent")
	}
	return nil
}

// validScope reports whether s is a space-separated list of RFC 6749 §3.3
// scope tokens.
func validScope(s string) bool { return scopetoken.ValidList(s) }
