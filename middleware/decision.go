package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Decision is what the middleware decided about one request, reported to
// Config.OnDecision for metrics, logs and traces, and recorded where
// [ContextWithDecision] asks (the schema of the event,
// in logs and OpenTelemetry, is in docs/operations.md, "Decision events").
// Status, Reason, Method, Name and ProtocolVersion are low-cardinality, so
// each can be a metric label as is: values a client chooses are reported
// only when the configuration or the MCP specification names them, and as
// "(unlisted)" otherwise. Session, ArgumentsSHA256, Rule, Principal and
// Err are for logs and traces, never for labels.
//
// The slices and the Principal are shared with the middleware and the
// request; read them during the call and do not modify them.
type Decision struct {
	// Status is the HTTP status the middleware answered, or 0 when the
	// request was authorized and passed to the next handler.
	Status int
	// Reason says why, as a stable code.
	Reason Reason

	// Method is the JSON-RPC "method" of a POST body: a method listed in
	// OperationPolicy.Methods or defined by MCP (the table of
	// docs/policy.md) is reported verbatim, any other as "(unlisted)". Empty when unknown: a request other than POST, a
	// message without a method (a response), or a refusal decided before
	// the operation was known (a bad token, a body too large or not
	// parsable; the body is never read before the token is valid).
	Method string
	// Name is the tool or prompt name (tools/call, prompts/get, and
	// completion/complete of a prompt) or the resource rule
	// (resources/read, resources/subscribe) the operation was authorized
	// by: a
	// name listed in OperationPolicy.Tools or Prompts, the URI of the
	// matching exact OperationPolicy.Resources rule, or the URI of the
	// matching prefix rule (the prefix, not the requested URI). A name or
	// URI the policy does not list is reported as "(unlisted)", since tool
	// names are chosen by the client. Empty for other methods and when the
	// message names nothing.
	Name string
	// ProtocolVersion is the MCP-Protocol-Version header when it names a
	// published MCP revision (2024-11-05 through 2026-07-28), "" when the
	// header is absent, and "(unlisted)" for any other value or for a
	// repeated header.
	ProtocolVersion string

	// Session is the request's Mcp-Session-Id when it is well formed
	// (one value of visible ASCII, at most 256 bytes), else "". It is the
	// server's choice, or for a refused request the client's: for logs
	// and traces, never a metric label.
	Session string

	// ArgumentsSHA256 is the hex SHA-256 of the RFC 8785 canonical form of
	// params.arguments of a tools/call or prompts/get that was authorized
	// or decided by a [Rule]; never the arguments themselves. Empty when
	// the request has none or the decision came before they were read.
	ArgumentsSHA256 string

	// Rule is the name of the [Rule] that decided: the rule that denied
	// (reason "rule_denied"), the require-scopes rule whose scopes were
	// missing (reason "insufficient_scope" or "step_up_exhausted"), or
	// the smallest name of the rules by which a list answer left entries
	// out (reason "list_filtered"). Empty otherwise.
	Rule string

	// Hidden are the names (resource URIs, URI templates) of the entries
	// a list answer left out, in answer order (reason "list_filtered":
	// Config.Lists, rules, Config.Pins); nil otherwise. Server-chosen
	// names: for logs and traces, never a label.
	Hidden []string

	// ID is the JSON-RPC "id" of the POST message as the client spelled
	// it (raw JSON), when it is a string or a number of at most 256 bytes,
	// the ids the middleware's own error answers echo; nil otherwise (no
	// id, another type, or the body was not read). It is set for a
	// message passed to the next handler, so that an answer the next
	// handler writes itself (a proxy's JSON-RPC error) carries it, and
	// for refusals that echo it. Never a label; it shares the request's
	// body, so read it during the request.
	ID []byte

	// Principal is the authenticated caller, nil when the request was
	// refused before (or without) a valid token.
	Principal *Principal
	// RequiredScopes are the scopes the operation needs, set when the
	// request was authorized or refused for scope (insufficient_scope,
	// step_up_exhausted); nil otherwise.
	RequiredScopes []string
	// MissingScopes are the required scopes the token does not satisfy,
	// for scope refusals; nil otherwise.
	MissingScopes []string

	// Err is the internal cause of a refusal: the error Config.Logger
	// receives, which errors.Is matches against the middleware and
	// validate sentinels. Nil when authorized. It is never sent to
	// clients.
	Err error
}

// Reason is a stable, low-cardinality code for a [Decision]: "authorized",
// "public", or the refusal's code ("no_token", "expired",
// "insufficient_scope", "step_up_exhausted", "dpop_proof", …), each listed
// with its status in docs/middleware.md ("Observability"). The set may
// grow; the values of existing codes never change. Compare with a string,
// e.g. d.Reason == "insufficient_scope".
type Reason string

// Reasons. Each refusal row of docs/answers.md ("Every answer a client can see") maps to one reason; token
// failures are split by the validate sentinel the validator returned.
const (
	// reasonAuthorized: the request was passed to the next handler.
	reasonAuthorized Reason = "authorized"
	// reasonOrigin: the Origin header is not allowed (errOrigin; 403).
	reasonOrigin Reason = "origin"
	// reasonNoToken: no bearer credentials (errNoToken; 401).
	reasonNoToken Reason = "no_token"
	// reasonNoPrincipal: [Middleware.RequireScopes] or
	// [Middleware.Challenge] found no [Principal] in the context: a
	// handler is not behind [Middleware.Handler] (Error "no_principal"; 401).
	// It signals a routing mistake.
	reasonNoPrincipal Reason = "no_principal"
	// reasonMalformedRequest: several Authorization headers, a malformed
	// Bearer header, or a token in the URL query (errMultipleTokens,
	// errMalformedHeader, errTokenInQuery; 400 invalid_request).
	reasonMalformedRequest Reason = "malformed_request"
	// reasonInvalidToken: the validator refused the token for a reason
	// without a finer code below (malformed, too large, algorithm, client,
	// lifetime, missing claim, inactive, a custom validator's error, nil
	// claims; 401 invalid_token).
	reasonInvalidToken Reason = "invalid_token"
	// reasonExpired: validate.Error{Reason: "expired"} (401 invalid_token).
	reasonExpired Reason = "expired"
	// reasonNotYetValid: validate.Error{Reason: "not_yet_valid"} or validate.Error{Reason: "issued_at"},
	// "nbf" or "iat" in the future, usually clock skew (401 invalid_token).
	reasonNotYetValid Reason = "not_yet_valid"
	// reasonAudience: validate.Error{Reason: "audience"} (401 invalid_token).
	reasonAudience Reason = "audience"
	// reasonIssuer: validate.Error{Reason: "issuer"} (401 invalid_token).
	reasonIssuer Reason = "issuer"
	// reasonSignature: validate.Error{Reason: "signature"} (401 invalid_token).
	reasonSignature Reason = "signature"
	// reasonUnknownKey: validate.Error{Reason: "unknown_key"}, no key with the token's
	// "kid" (401 invalid_token).
	reasonUnknownKey Reason = "unknown_key"
	// reasonType: validate.Error{Reason: "type"}, a JOSE "typ" other than at+jwt or a
	// forbidden header (401 invalid_token).
	reasonType Reason = "type"
	// reasonKeysUnavailable: validate.ErrKeysUnavailable, or the
	// validator's context ended (503).
	reasonKeysUnavailable Reason = "keys_unavailable"
	// reasonBodyTooLarge: errBodyTooLarge (413).
	reasonBodyTooLarge Reason = "body_too_large"
	// reasonParseError: errMalformedBody, not JSON (400, -32700).
	reasonParseError Reason = "parse_error"
	// reasonInvalidMessage: errInvalidMessage, JSON that is not an
	// authorizable JSON-RPC message (400, -32600).
	reasonInvalidMessage Reason = "invalid_message"
	// reasonBatch: errBatch (400, -32600).
	reasonBatch Reason = "batch"
	// reasonHeaderMismatch: errHeaderMismatch (400, -32020).
	reasonHeaderMismatch Reason = "header_mismatch"
	// reasonInvalidParams: errMissingMeta, a 2026-07-28 request without
	// the _meta protocol version (400, -32602).
	reasonInvalidParams Reason = "invalid_params"
	// reasonInsufficientScope: errInsufficientScope (403 with a step-up
	// challenge).
	reasonInsufficientScope Reason = "insufficient_scope"
	// reasonStepUpExhausted: errStepUpExhausted (terminal 403, with a
	// challenge that names no error and no scope).
	reasonStepUpExhausted Reason = "step_up_exhausted"
	// reasonNotListed: errNotListed, OperationPolicy.DenyUnlisted
	// (terminal 403).
	reasonNotListed Reason = "not_listed"
	// reasonRuleDenied: a [Rule] denied the request, or its condition
	// failed at request time (errRuleDenied; the terminal 403
	// access_denied).
	reasonRuleDenied Reason = "rule_denied"
	// reasonTenant: Error "no_tenant" or "tenant_mismatch" passed to
	// [Middleware.Challenge] (403).
	reasonTenant Reason = "tenant"
	// reasonListFiltered: a list answer left entries out (Status 0, the
	// answer passes; Decision.Hidden names them). A decision of its own,
	// after the list request's "authorized".
	reasonListFiltered Reason = "list_filtered"
)

// unlistedLabel, "(unlisted)", is the value of [Decision.Method], [Decision.Name] and
// [Decision.ProtocolVersion] for a client-chosen value that neither the
// configuration nor the MCP specification names.
const unlistedLabel = "(unlisted)"

// versionLabel returns Decision.ProtocolVersion for h.
func versionLabel(h http.Header) string {
	v := h[hdrProtocolVersion]
	switch {
	case len(v) == 0:
		return ""
	case len(v) > 1:
		return unlistedLabel
	}
	switch v[0] {
	case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28":
		return v[0]
	}
	return unlistedLabel
}

type decisionKey struct{}

// ContextWithDecision returns a copy of ctx in which the middleware
// records its decision about a request served with that context: the
// [Decision] reported to Config.OnDecision (by [Middleware.Handler],
// [Middleware.Protect], [Middleware.RequireScopes] and
// [Middleware.Challenge]) is also stored in *d, before the answer is
// written or the next handler runs, whether the request is refused or
// passed on. It is the one place where code composed around the
// middleware reads what was decided, without a hook and without reading
// the body again: a handler wrapping the middleware reads *d once it
// returns (a log line with the upstream's status; d.Reason is empty when
// nothing was decided), and the next handler reads it while it runs (the
// operation, the principal and the JSON-RPC id it was passed with). A
// later decision overwrites an earlier one (a RequireScopes refusal after
// Handler passed the request). *d must not be read concurrently with the
// request.
func ContextWithDecision(ctx context.Context, d *Decision) context.Context {
	return context.WithValue(ctx, decisionKey{}, d)
}

// deliver records d where the request's context asks
// ([ContextWithDecision]) and reports it to Config.OnDecision.
func (m *Middleware) deliver(ctx context.Context, rec *Decision, d Decision) {
	if rec != nil {
		*rec = d
	}
	if m.onDecision != nil {
		m.onDecision(ctx, d)
	}
}

// Report delivers d, a decision about r made by code composed around the
// middleware (mcpguard proxy's Host check, rate limit and upstream
// identity, answered without or after the middleware's own decision), as
// the middleware delivers its own: recorded where r's context asks
// ([ContextWithDecision]) and passed to Config.OnDecision, one schema for
// every decision (docs/operations.md, "Decision events"). When d leaves
// them empty, ProtocolVersion and Session are read from r's header as the
// middleware reads them; nothing else is filled in: what the caller does
// not know stays empty.
func (m *Middleware) Report(r *http.Request, d Decision) {
	if d.ProtocolVersion == "" {
		d.ProtocolVersion = versionLabel(r.Header)
	}
	if d.Session == "" {
		d.Session, _ = sessionID(r.Header)
	}
	rec, _ := r.Context().Value(decisionKey{}).(*Decision)
	m.deliver(r.Context(), rec, d)
}

// report delivers the decision of rf, if anyone asks for it (deliver).
// It never allocates itself.
func (m *Middleware) report(ctx context.Context, h http.Header, rf *refusal) {
	rec, _ := ctx.Value(decisionKey{}).(*Decision)
	if m.onDecision == nil && rec == nil {
		return
	}
	d := decision(h, rf.reason, rf.p, rf.g)
	d.Status, d.Err = rf.status, rf.err
	d.RequiredScopes, d.MissingScopes = scopesOf(rf.err)
	d.Rule = rf.rule
	d.ID = echoable(rf.id)
	d.ArgumentsSHA256 = argsDigest(rf.args)
	m.deliver(ctx, rec, d)
}

// reportPass delivers the decision for a request passed to the next
// handler as p's (p.grant its operation; msg its POST message, nil for
// none), if anyone asks for it (deliver): authorized, with the
// operation's scopes, or public.
func (m *Middleware) reportPass(ctx context.Context, h http.Header, p *Principal, msg *message) {
	rec, _ := ctx.Value(decisionKey{}).(*Decision)
	if m.onDecision == nil && rec == nil {
		return
	}
	reason := reasonAuthorized
	if p.Anonymous {
		reason = reasonPublic
	}
	d := decision(h, reason, p, p.grant)
	if !p.Anonymous {
		d.RequiredScopes = p.grant.op.scopes
	}
	if msg != nil {
		d.ID = echoable(msg.id)
		d.ArgumentsSHA256 = argsDigest(msg.args)
	}
	m.deliver(ctx, rec, d)
}

// decision returns the labels of a decision: reason, the operation g
// (nil: unknown), the protocol version of h and the principal p.
func decision(h http.Header, reason Reason, p *Principal, g *grant) Decision {
	d := Decision{Reason: reason, ProtocolVersion: versionLabel(h), Principal: p}
	d.Session, _ = sessionID(h)
	if g != nil {
		d.Method, d.Name = g.method, g.name
	}
	return d
}

// argsDigest returns Decision.ArgumentsSHA256 of raw, the raw
// params.arguments ("" for none).
func argsDigest(raw []byte) string {
	if raw == nil {
		return ""
	}
	c, err := strictjson.Canonical(raw)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}
