package middleware

import (
	"errors"
	"strings"
)

// Sentinel errors. Every error the package returns wraps one of these (or,
// for token failures, the validate sentinel the [TokenValidator] returned),
// so callers branch with [errors.Is]. The text is part of the API and never
// contains request values.
var (
	// ErrConfig: [New] was given an unusable [Config]. Only New returns it.
	ErrConfig = errors.New("middleware: invalid config")

	// errNoToken: the request carries no bearer credentials: no
	// Authorization header, or one with another scheme (Basic, DPoP, …).
	// Answered 401 with a challenge without an error code (RFC 6750 §3.1).
	errNoToken = errors.New("middleware: no bearer token")
	// errMultipleTokens: the request has more than one Authorization header
	// line (RFC 6750 §2: one method, one token). Answered 400
	// invalid_request.
	errMultipleTokens = errors.New("middleware: multiple authorization headers")
	// errMalformedHeader: the Authorization header names the Bearer scheme
	// but is not "Bearer" 1*SP b64token (RFC 6750 §2.1). Answered 400
	// invalid_request.
	errMalformedHeader = errors.New("middleware: malformed bearer authorization header")
	// errTokenInQuery: the URL query has an access_token parameter
	// (RFC 6750 §2.3), which MCP forbids ("MUST NOT" in the query string),
	// with or without an Authorization header. Answered 400
	// invalid_request.
	errTokenInQuery = errors.New("middleware: access token in URL query")

	// errOrigin: the Origin header is present and neither the resource's
	// origin nor listed in Config.AllowedOrigins (MCP Streamable HTTP
	// §Security Warning, DNS rebinding). Answered 403 without a challenge.
	errOrigin = errors.New("middleware: origin not allowed")

	// errBodyTooLarge: a POST body exceeds Config.MaxBodyBytes. Answered
	// 413.
	errBodyTooLarge = errors.New("middleware: request body too large")
	// errMalformedBody: a POST body is not valid JSON (RFC 8259), or could
	// not be read. Answered 400 with JSON-RPC -32700.
	errMalformedBody = errors.New("middleware: request body is not JSON")
	// errInvalidMessage: a POST body is JSON but not a JSON-RPC message the
	// middleware can authorize: not an object, a member it authorizes on
	// ("method", "params", "id", "name", "uri", "_meta", the
	// protocolVersion key, "ref" and its "type", "name" and "uri")
	// repeated or spelled in another case, one of them with the wrong type
	// or a string that is not valid UTF-8, or a
	// resources/read URI that is not in canonical form while any
	// OperationPolicy.Resources rule is configured (see
	// [ResourceRule].Prefix). Answered 400 with JSON-RPC -32600.
	errInvalidMessage = errors.New("middleware: invalid JSON-RPC message")
	// errBatch: a POST body is a JSON array, a JSON-RPC batch. MCP removed
	// batching in 2025-06-18; the middleware refuses it for every revision.
	// Answered 400 with JSON-RPC -32600.
	errBatch = errors.New("middleware: JSON-RPC batch not supported")
	// errHeaderMismatch: an MCP-Protocol-Version, Mcp-Method or Mcp-Name
	// header is missing, repeated, has invalid characters, or differs from
	// the body (MCP 2026-07-28 Streamable HTTP §Server Validation).
	// Answered 400 with JSON-RPC -32020.
	errHeaderMismatch = errors.New("middleware: header mismatch")
	// errMissingMeta: a request of MCP 2026-07-28 or later (by its
	// MCP-Protocol-Version header) whose params._meta lacks
	// "io.modelcontextprotocol/protocolVersion" (or has no _meta). MCP
	// 2026-07-28 basic/index.mdx §_meta: 400 with JSON-RPC -32602 (Invalid
	// params), not -32020.
	errMissingMeta = errors.New("middleware: _meta protocol version missing")

	// errInsufficientScope: the token lacks a scope the operation needs.
	// Errors carrying the scopes are [*ScopeError]. Answered 403
	// insufficient_scope with the scopes (RFC 6750 §3.1).
	errInsufficientScope = errors.New("middleware: insufficient scope")
	// errStepUpExhausted: the principal was already sent Config.StepUpLimit
	// insufficient_scope challenges for the same scopes within
	// Config.StepUpWindow without coming back with them (a success with
	// the scopes resets the count). Answered with a terminal 403 whose
	// challenge carries only resource_metadata: no error code and no scope,
	// so that clients do not start a new authorization (docs/policy.md).
	errStepUpExhausted = errors.New("middleware: step-up limit reached")
	// errNotListed: OperationPolicy.DenyUnlisted is set and the method, or
	// the tool, prompt or resource named by the request, is not in the
	// policy. Answered with a terminal 403 whose challenge carries only
	// resource_metadata (RFC 6750 §3 without inviting a new authorization).
	errNotListed = errors.New("middleware: operation not listed in policy")

	// ErrNoPrincipal: the context carries no [Principal]: the handler is not
	// behind [Middleware.Handler]. [Middleware.Challenge] answers it 401.
	ErrNoPrincipal = errors.New("middleware: no principal in context")
	// ErrNoTenant: the principal's token has no tenant claim
	// (validate.Config.TenantClaim). [Middleware.Challenge] answers 403.
	ErrNoTenant = errors.New("middleware: principal has no tenant")
	// ErrTenantMismatch: a tenant supplied by the client differs from the
	// principal's. [Middleware.Challenge] answers 403.
	ErrTenantMismatch = errors.New("middleware: tenant mismatch")
)

// ScopeError reports the scopes an operation needs and the ones the token
// lacks after scope implications (Config.ScopeImplies) are applied. It
// matches errInsufficientScope with [errors.Is].
type ScopeError struct {
	// Required is every scope the operation needs, in policy order: the
	// base scopes, then the method's, then the tool's, prompt's or
	// resource's (and a route's, for [Middleware.RequireScopes]).
	Required []string
	// Missing is the subset of Required the token does not satisfy.
	Missing []string
}

func (e *ScopeError) Error() string {
	return "middleware: insufficient scope: missing " + strings.Join(e.Missing, " ")
}

// Unwrap returns errInsufficientScope.
func (e *ScopeError) Unwrap() error { return errInsufficientScope }
