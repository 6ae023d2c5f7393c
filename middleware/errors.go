package middleware

import (
	"errors"
	"strings"
)

// The package's refusals. Those a caller meets (from [New],
// [TenantFromContext], [CheckTenant], [Middleware.Authenticate], or to give
// [Middleware.Challenge]) are [Error] values; the others are named by
// [Decision].Reason only. Every error the package returns wraps one of
// these (or, for token failures, the validate error the [TokenValidator]
// returned), so callers branch with [errors.Is]. The text is part of the
// API and never contains request values.
var (
	// errConfig: [New] was given an unusable [Config] (Error "config").
	errConfig error = Error{Reason: "config"}

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

	// errInsufficientScope: the token lacks a scope the operation needs
	// (Error "insufficient_scope"; the errors carrying the scopes are
	// Error values with Required and Missing set). Answered 403
	// insufficient_scope with the scopes (RFC 6750 §3.1).
	errInsufficientScope error = Error{Reason: "insufficient_scope"}
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

	// errNoPrincipal: the context carries no [Principal] (Error
	// "no_principal").
	errNoPrincipal error = Error{Reason: "no_principal"}
	// errNoTenant: the principal's token has no tenant claim (Error
	// "no_tenant").
	errNoTenant error = Error{Reason: "no_tenant"}
	// errTenantMismatch: a tenant supplied by the client differs from the
	// principal's (Error "tenant_mismatch").
	errTenantMismatch error = Error{Reason: "tenant_mismatch"}
)

// Error is the error a caller of this package meets: [New]'s, the tenant
// checks', [Middleware.Authenticate]'s for a missing scope, and the one to
// give [Middleware.Challenge] when a handler finds a scope missing. Match
// it by reason with errors.Is(err, middleware.Error{Reason: "no_tenant"})
// (its Is method compares Reasons only), or read it with [errors.As] into
// an Error value. Every other refusal is named by [Decision].Reason.
type Error struct {
	// Reason names the error. The reasons are stable:
	//   - "config": [New] was given an unusable [Config]; for bad
	//     Metadata the error also wraps prm.ErrInvalidMetadata or
	//     prm.ErrInvalidResource. Only New returns it.
	//   - "no_principal": the context carries no [Principal]: the handler
	//     is not behind [Middleware.Handler]. [Middleware.Challenge]
	//     answers it 401 (Decision reason "no_principal").
	//   - "no_tenant": the principal's token has no tenant claim
	//     (validate.Config.TenantClaim). [Middleware.Challenge] answers 403
	//     (Decision reason "tenant").
	//   - "tenant_mismatch": a tenant supplied by the client differs from
	//     the principal's. [Middleware.Challenge] answers 403 (Decision
	//     reason "tenant").
	//   - "insufficient_scope": the token lacks a scope the operation needs;
	//     Required and Missing say which. [Middleware.Challenge] answers
	//     403 insufficient_scope listing Required (all of the base scopes
	//     when Required is empty), counted by the step-up bound.
	Reason string
	// Required is every scope the operation needs ("insufficient_scope"
	// only), in policy order: the base scopes, then the method's, then
	// the tool's, prompt's or resource's (and a route's, for
	// [Middleware.RequireScopes]).
	Required []string
	// Missing is the subset of Required the token does not satisfy after
	// scope implications (Config.ScopeImplies) are applied
	// ("insufficient_scope" only).
	Missing []string
}

// Error returns the text of the reason ("middleware: tenant mismatch");
// the text is part of the API.
func (e Error) Error() string {
	switch e.Reason {
	case "config":
		return "middleware: invalid config"
	case "no_principal":
		return "middleware: no principal in context"
	case "no_tenant":
		return "middleware: principal has no tenant"
	case "tenant_mismatch":
		return "middleware: tenant mismatch"
	case "insufficient_scope":
		if len(e.Missing) == 0 {
			return "middleware: insufficient scope"
		}
		return "middleware: insufficient scope: missing " + strings.Join(e.Missing, " ")
	}
	return "middleware: " + e.Reason
}

// Is reports whether target is an [Error] with e's Reason, so that
// errors.Is(err, Error{Reason: "insufficient_scope"}) matches an error
// whatever its scopes.
func (e Error) Is(target error) bool {
	t, ok := target.(Error)
	return ok && t.Reason == e.Reason
}
