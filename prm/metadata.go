package prm

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// offlineAccess must not appear in scopes_supported (MCP 2026-07-28,
// §Refresh Tokens: servers "SHOULD NOT include offline_access in ...
// Protected Resource Metadata scopes_supported"). Validate enforces it.
const offlineAccess = "offline_access"

// Metadata is an RFC 9728 §2 protected-resource metadata document. Field
// comments quote the member definitions of RFC 9728 §2. Unknown members are
// dropped when decoding.
type Metadata struct {
	// Resource is the protected resource's resource identifier (RFC 9728
	// §2 "resource", REQUIRED; §1.2): an https URL with no fragment. For an
	// MCP server it is the canonical MCP endpoint URL, e.g.
	// "https://mcp.example.com/mcp", and the audience tokens must carry.
	Resource string `json:"resource"`
	// AuthorizationServers lists the issuer identifiers of the OAuth
	// authorization servers that can be used with this resource (RFC 9728
	// §2 "authorization_servers", OPTIONAL there; MCP makes at least one
	// entry a MUST).
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is the https URL of the resource's own JWK Set, holding keys
	// for signed resource responses, not token-verification keys (RFC 9728
	// §2 "jwks_uri", OPTIONAL).
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported lists the scope values clients use to request access
	// to this resource (RFC 9728 §2 "scopes_supported", RECOMMENDED). MCP
	// reads it as the minimal set for basic functionality; it must not
	// contain "offline_access".
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported lists how a bearer token may be sent: "header",
	// "body" or "query" (RFC 9728 §2 "bearer_methods_supported", OPTIONAL).
	// RFC 9728 gives [] the meaning "none"; this type cannot express it,
	// because an empty slice is omitted from the JSON.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceSigningAlgValuesSupported lists the JWS algorithms the
	// resource uses to sign its responses; "none" is not allowed (RFC 9728
	// §2 "resource_signing_alg_values_supported", OPTIONAL).
	ResourceSigningAlgValuesSupported []string `json:"resource_signing_alg_values_supported,omitempty"`
	// ResourceName is a human-readable name for display to end users
	// (RFC 9728 §2 "resource_name", RECOMMENDED; language tags per §2.1 are
	// not modelled).
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the URL of developer documentation (RFC 9728
	// §2 "resource_documentation", OPTIONAL).
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// ResourcePolicyURI is the URL of the resource's requirements on how a
	// client may use the data it provides (RFC 9728 §2
	// "resource_policy_uri", OPTIONAL).
	ResourcePolicyURI string `json:"resource_policy_uri,omitempty"`
	// ResourceTOSURI is the URL of the resource's terms of service (RFC 9728
	// §2 "resource_tos_uri", OPTIONAL).
	ResourceTOSURI string `json:"resource_tos_uri,omitempty"`
	// TLSClientCertificateBoundAccessTokens reports support for RFC 8705
	// mutual-TLS certificate-bound access tokens (RFC 9728 §2
	// "tls_client_certificate_bound_access_tokens", OPTIONAL, default false).
	TLSClientCertificateBoundAccessTokens bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
	// AuthorizationDetailsTypesSupported lists the RFC 9396 authorization
	// details "type" values supported (RFC 9728 §2
	// "authorization_details_types_supported", OPTIONAL).
	AuthorizationDetailsTypesSupported []string `json:"authorization_details_types_supported,omitempty"`
	// DPoPSigningAlgValuesSupported lists the JWS algorithms accepted for
	// RFC 9449 DPoP proofs (RFC 9728 §2 "dpop_signing_alg_values_supported",
	// OPTIONAL).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired reports that the resource always
	// requires RFC 9449 DPoP-bound access tokens (RFC 9728 §2
	// "dpop_bound_access_tokens_required", OPTIONAL, default false).
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
	// SignedMetadata is a JWT whose claims are metadata values (RFC 9728
	// §2 "signed_metadata", §2.2). This package passes it through; it does
	// not verify it, and Validate checks only its compact-JWS shape.
	SignedMetadata string `json:"signed_metadata,omitempty"`
}

// Validate checks m against RFC 9728 §2 and the MCP authorization rules and
// returns an error wrapping [ErrInvalidMetadata] naming the first bad member:
//
//   - resource: an absolute URL, https or, only for a loopback host
//     (127.0.0.0/8, ::1, "localhost"), http; no userinfo, no fragment, no
//     query (RFC 8707 §2 says SHOULD NOT; this package refuses it), no "."
//     or ".." path segments, printable ASCII only. Upper-case scheme or host
//     is accepted (MCP: implementations SHOULD accept it) but the lower-case
//     form is canonical and should be configured.
//   - authorization_servers: at least one (MCP MUST), each an absolute
//     https-or-loopback-http URL without userinfo, query or fragment.
//   - jwks_uri: https-or-loopback-http; documentation, policy and terms of
//     service URLs: absolute http(s).
//   - scopes_supported: RFC 6749 §3.3 scope tokens, never "offline_access".
//   - bearer_methods_supported: "header", "body" or "query".
//   - resource_signing_alg_values_supported: never "none".
//   - no list holds an empty string; signed_metadata looks like a compact
//     JWS.
func (m *Metadata) Validate() error {
	if m == nil {
		return fmt.Errorf("%w: nil metadata", ErrInvalidMetadata)
	}
	if err := checkResource(m.Resource); err != nil {
		return fmt.Errorf("%w: resource: %s", ErrInvalidMetadata, err.msg)
	}
	if len(m.AuthorizationServers) == 0 {
		return fmt.Errorf("%w: authorization_servers: at least one is required", ErrInvalidMetadata)
	}
	for i, s := range m.AuthorizationServers {
		if err := checkURL(s, urlRules{secure: true, noQuery: true}); err != nil {
			return fmt.Errorf("%w: authorization_servers[%d]: %s", ErrInvalidMetadata, i, err.msg)
		}
	}
	if m.JWKSURI != "" {
		if err := checkURL(m.JWKSURI, urlRules{secure: true}); err != nil {
			return fmt.Errorf("%w: jwks_uri: %s", ErrInvalidMetadata, err.msg)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"resource_documentation", m.ResourceDocumentation},
		{"resource_policy_uri", m.ResourcePolicyURI},
		{"resource_tos_uri", m.ResourceTOSURI},
	} {
		if f.v == "" {
			continue
		}
		if err := checkURL(f.v, urlRules{}); err != nil {
			return fmt.Errorf("%w: %s: %s", ErrInvalidMetadata, f.name, err.msg)
		}
	}
	for i, s := range m.ScopesSupported {
		switch {
		case !isScopeToken(s):
			return fmt.Errorf("%w: scopes_supported[%d]: not a scope token", ErrInvalidMetadata, i)
		case s == offlineAccess:
			return fmt.Errorf("%w: scopes_supported[%d]: offline_access is not a resource scope", ErrInvalidMetadata, i)
		}
	}
	for i, s := range m.BearerMethodsSupported {
		if s != "header" && s != "body" && s != "query" {
			return fmt.Errorf("%w: bearer_methods_supported[%d]: unknown method", ErrInvalidMetadata, i)
		}
	}
	if slices.Contains(m.ResourceSigningAlgValuesSupported, "none") {
		return fmt.Errorf("%w: resource_signing_alg_values_supported: none is not allowed", ErrInvalidMetadata)
	}
	for _, l := range []struct {
		name string
		v    []string
	}{
		{"resource_signing_alg_values_supported", m.ResourceSigningAlgValuesSupported},
		{"authorization_details_types_supported", m.AuthorizationDetailsTypesSupported},
		{"dpop_signing_alg_values_supported", m.DPoPSigningAlgValuesSupported},
	} {
		if i := slices.Index(l.v, ""); i >= 0 {
			return fmt.Errorf("%w: %s[%d]: empty value", ErrInvalidMetadata, l.name, i)
		}
	}
	if m.SignedMetadata != "" && !looksLikeJWS(m.SignedMetadata) {
		return fmt.Errorf("%w: signed_metadata: not a compact JWS", ErrInvalidMetadata)
	}
	return nil
}

// ruleError is an internal validation failure; msg never quotes the input.
type ruleError struct{ msg string }

func fail(msg string) *ruleError { return &ruleError{msg} }

// urlRules selects the checks of checkURL.
type urlRules struct {
	secure   bool // https, or http with a loopback host
	noQuery  bool // no query component, not even an empty one
	resource bool // also no "." or ".." segments
}

// checkResource applies the rules for a protected-resource identifier.
func checkResource(s string) *ruleError {
	if s == "" {
		return fail("required")
	}
	return checkURL(s, urlRules{secure: true, noQuery: true, resource: true})
}

// checkURL parses s and applies rules. Every URL must be absolute http(s),
// with a host, printable ASCII, no userinfo and no fragment.
func checkURL(s string, r urlRules) *ruleError {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return fail("must be printable ASCII without spaces")
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || !u.IsAbs() {
		return fail("must be an absolute URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fail("must use https")
	}
	if u.Hostname() == "" {
		return fail("must have a host")
	}
	if r.secure && u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fail("must use https (http is allowed only for loopback hosts)")
	}
	if u.User != nil {
		return fail("must not contain userinfo")
	}
	if strings.Contains(s, "#") {
		return fail("must not contain a fragment")
	}
	if r.noQuery && (u.RawQuery != "" || u.ForceQuery) {
		return fail("must not contain a query")
	}
	if r.resource {
		for seg := range strings.SplitSeq(u.Path, "/") {
			if seg == "." || seg == ".." {
				return fail("must not contain dot segments")
			}
		}
	}
	return nil
}

// isLoopback reports whether host (without brackets or port) is "localhost"
// or a loopback IP address (127.0.0.0/8, ::1).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isScopeToken reports whether s is an RFC 6749 §3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool { return scopetoken.Valid(s) }

// looksLikeJWS reports whether s has the compact JWS shape: three
// dot-separated base64url segments, the first two non-empty.
func looksLikeJWS(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
