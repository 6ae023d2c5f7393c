package challenge

import (
	"net/http"
	"slices"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// ErrorCode is an RFC 6750 §3.1 error code, the value of the "error"
// auth-param.
type ErrorCode string

// The RFC 6750 §3.1 error codes.
const (
	// InvalidRequest: the request is missing a parameter, uses an
	// unsupported parameter or method, or is otherwise malformed. HTTP 400.
	InvalidRequest ErrorCode = "invalid_request"
	// InvalidToken: the access token is expired, revoked, malformed or
	// invalid for other reasons. HTTP 401.
	InvalidToken ErrorCode = "invalid_token"
	// InsufficientScope: the request requires higher privileges than the
	// access token provides. HTTP 403.
	InsufficientScope ErrorCode = "insufficient_scope"
)

// offlineAccess is never rendered in a scope (MCP 2026-07-28, §Refresh
// Tokens: "SHOULD NOT include offline_access in WWW-Authenticate scope").
const offlineAccess = "offline_access"

// Challenge is one RFC 9110 §11.6.1 challenge with the RFC 6750 §3 and
// RFC 9728 §5.1 parameters broken out. The zero value has no parameters
// and renders as "" ([Challenge.Err]): a challenge needs at least one
// auth-param, for a request without credentials typically
// resource_metadata (RFC 9728 §5.1) and scope.
type Challenge struct {
	// Scheme is the auth-scheme. "" renders as "Bearer". ParseAll reports
	// "Bearer" for any spelling of that scheme (schemes are
	// case-insensitive, RFC 9110 §11.1) and other schemes as received.
	Scheme string
	// Realm is the RFC 9110 §11.5 / RFC 6750 §3 realm; "" omits it.
	Realm string
	// Error is the RFC 6750 §3.1 error code; "" omits it, which RFC 6750
	// §3.1 asks for when the request carried no credentials.
	Error ErrorCode
	// ErrorDescription is the RFC 6750 §3 error_description: short
	// human-readable ASCII for developers. Rendered only when Error is set;
	// see the package doc for the charset fallback. Never put internal
	// error text here.
	ErrorDescription string
	// Scope lists the RFC 6750 §3 scope tokens the request needs, rendered
	// space-separated. "offline_access", duplicates and invalid tokens are
	// dropped when rendering.
	Scope []string
	// ResourceMetadata is the RFC 9728 §5.1 URL of the protected-resource
	// metadata document; "" omits it.
	ResourceMetadata string
	// Params holds extension auth-params (RFC 6750 §3 allows them; for
	// example error_uri). Names are case-insensitive: ParseAll reports them in
	// lower case and rendering lower-cases them. Names that are not RFC 9110
	// tokens, or that name one of the fields above, are ignored when
	// rendering. Rendered after the standard parameters, sorted by name.
	Params map[string]string
	// Token68 is the RFC 9110 §11.2 token68 form of a challenge
	// (e.g. "Negotiate abc=="), which carries no auth-params. It is rendered
	// only when no auth-param is rendered, and only when it is a valid
	// token68. Bearer challenges do not use it.
	Token68 string
}

// StatusCode returns the HTTP status RFC 6750 §3.1 pairs with c.Error:
// 400 for invalid_request, 403 for insufficient_scope, and 401 for
// invalid_token, no error, or any other code.
func (c Challenge) StatusCode() int {
	switch c.Error {
	case InvalidRequest:
		return http.StatusBadRequest
	case InsufficientScope:
		return http.StatusForbidden
	default:
		return http.StatusUnauthorized
	}
}

// StepUp returns the RFC 6750 §3.1 Bearer insufficient_scope challenge (HTTP 403)
// that MCP step-up authorization expects: error="insufficient_scope", the
// scopes the operation needs, and the RFC 9728 §5.1 resource_metadata URL.
// Scopes keep the order given; duplicates, empty or invalid tokens and
// "offline_access" are removed. Per MCP 2026-07-28, pass every scope the
// current operation needs, in one challenge; a server serving 2025-11-25
// clients may also pass the token's already-granted scopes.
func StepUp(resourceMetadata string, scopes ...string) Challenge {
	return Challenge{
		Scheme:           "Bearer",
		Error:            InsufficientScope,
		Scope:            cleanScopes(scopes),
		ResourceMetadata: resourceMetadata,
	}
}

// cleanScopes applies the scope rendering rules: valid RFC 6750 scope
// tokens only, first occurrence wins, no offline_access. It returns nil when
// nothing is left.
func cleanScopes(in []string) []string {
	var out []string
	var seen map[string]struct{} // for long lists, so cleaning stays linear
	if len(in) > 16 {
		seen = make(map[string]struct{}, len(in))
	}
	for _, s := range in {
		if s == offlineAccess || !scopetoken.Valid(s) {
			continue
		}
		if seen != nil {
			if _, dup := seen[s]; dup {
				continue
			}
			seen[s] = struct{}{}
		} else if slices.Contains(out, s) {
			continue
		}
		out = append(out, s)
	}
	return out
}
