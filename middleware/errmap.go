package middleware

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/validate"
)

// Fixed error_description texts (RFC 6750 §3 charset). They describe the
// class of failure only; the cause goes to the log.
const (
	descInvalidToken      = "The access token is invalid"
	descMultipleTokens    = "Send exactly one Authorization header"
	descMalformedHeader   = "Malformed Bearer authorization header"
	descTokenInQuery      = "Access tokens must not be sent in the URL query"
	descInsufficientScope = "The operation requires additional scope"
)

// Fixed response bodies.
const (
	bodyUnauthorized   = `{"error":"unauthorized"}`
	bodyInvalidToken   = `{"error":"invalid_token"}`
	bodyInvalidRequest = `{"error":"invalid_request"}`
	bodyInsufficient   = `{"error":"insufficient_scope"}`
	bodyUnavailable    = `{"error":"temporarily_unavailable"}`
	bodyAccessDenied   = `{"error":"access_denied"}`
	// MCP Streamable HTTP §Security Warning: the 403 for an invalid Origin
	// MAY carry "a JSON-RPC error response that has no id".
	bodyOrigin         = `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Origin not allowed"}}`
	bodyTooLarge       = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large"}}`
	bodyParseError     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
	bodyInvalidMessage = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
	bodyBatch          = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Batch requests are not supported"}}`
	// MCP 2026-07-28 §Server Validation: 400 with JSON-RPC -32020
	// (HeaderMismatch); the message is fixed and never quotes values.
	bodyMismatchHead = `{"jsonrpc":"2.0","id":`
	bodyMismatchTail = `,"error":{"code":-32020,"message":"Header mismatch"}}`
	// MCP 2026-07-28 basic/index.mdx §_meta: a request missing a required
	// _meta field "MUST" be rejected with -32602 (Invalid params) and, on
	// HTTP, 400.
	bodyInvalidParamsTail = `,"error":{"code":-32602,"message":"Invalid params"}}`
)

// kind is a class of refusal; each has one precomputed answer.
type kind uint8

const (
	kindInvalidToken kind = iota // the default: any unrecognized error
	kindNoToken
	kindNoPrincipal
	kindMultipleTokens
	kindMalformedHeader
	kindTokenInQuery
	kindOrigin
	kindUnavailable
	kindTooLarge
	kindMalformedBody
	kindInvalidMessage
	kindBatch
	kindHeaderMismatch
	kindInvalidParams
	kindInsufficientScope
	kindStepUpExhausted
	kindForbidden
	kindUnknownSession
	kindSessionHeader
	kindSessionUnavailable
	kindUnknownTask
	kindMethodNotFound
	kindMethodNotAllowed
	kindBadGateway
	kindToolChanged
	numKinds
)

// errorKinds is THE mapping from errors to answers and [Reason] codes,
// tried in order with errors.Is. Any error not listed, in particular
// every validate sentinel except ErrKeysUnavailable and any error of a
// custom TokenValidator, is a token failure: 401 invalid_token. The
// validate rows at the end only refine the Reason of that answer.
var errorKinds = []struct {
	err    error
	kind   kind
	reason Reason
}{
	{errOrigin, kindOrigin, reasonOrigin},
	{errNoToken, kindNoToken, reasonNoToken},
	{errNoPrincipal, kindNoPrincipal, reasonNoPrincipal},
	{errMultipleTokens, kindMultipleTokens, reasonMalformedRequest},
	{errMalformedHeader, kindMalformedHeader, reasonMalformedRequest},
	{errTokenInQuery, kindTokenInQuery, reasonMalformedRequest},
	{validate.ErrKeysUnavailable, kindUnavailable, reasonKeysUnavailable},
	{context.DeadlineExceeded, kindUnavailable, reasonKeysUnavailable},
	{context.Canceled, kindUnavailable, reasonKeysUnavailable},
	{errBodyTooLarge, kindTooLarge, reasonBodyTooLarge},
	{errMalformedBody, kindMalformedBody, reasonParseError},
	{errBatch, kindBatch, reasonBatch},
	{errInvalidMessage, kindInvalidMessage, reasonInvalidMessage},
	{errMissingMeta, kindInvalidParams, reasonInvalidParams},
	{errHeaderMismatch, kindHeaderMismatch, reasonHeaderMismatch},
	{errStepUpExhausted, kindStepUpExhausted, reasonStepUpExhausted},
	{errInsufficientScope, kindInsufficientScope, reasonInsufficientScope},
	{errNotListed, kindForbidden, reasonNotListed},
	{errRuleDenied, kindForbidden, reasonRuleDenied},
	{errUnknownSession, kindUnknownSession, reasonUnknownSession},
	{errSessionHeader, kindSessionHeader, reasonSessionHeader},
	{errUnknownEventID, kindSessionHeader, reasonUnknownEventID},
	{errSessionsFull, kindSessionUnavailable, reasonSessionsFull},
	{errSessionStore, kindSessionUnavailable, reasonSessionStore},
	{errSessionCreated, kindSessionUnavailable, reasonSessionCreated},
	{errUnknownTask, kindUnknownTask, reasonUnknownTask},
	{errMethodNotFound, kindMethodNotFound, reasonMethodNotFound},
	{errMethodNotAllowed, kindMethodNotAllowed, reasonMethodNotAllowed},
	{errUpgrade, kindBadGateway, reasonUpgrade},
	{errBodyNotAllowed, kindInvalidMessage, reasonBodyNotAllowed},
	{errTaskStore, kindUnavailable, reasonTaskStore},
	{errNoTenant, kindForbidden, reasonTenant},
	{errToolChanged, kindToolChanged, reasonToolChanged},
	{errPinStore, kindUnavailable, reasonPinStore},
	{errTenantMismatch, kindForbidden, reasonTenant},
	{validate.Error{Reason: "expired"}, kindInvalidToken, reasonExpired},
	{validate.Error{Reason: "not_yet_valid"}, kindInvalidToken, reasonNotYetValid},
	{validate.Error{Reason: "issued_at"}, kindInvalidToken, reasonNotYetValid},
	{validate.Error{Reason: "audience"}, kindInvalidToken, reasonAudience},
	{validate.Error{Reason: "issuer"}, kindInvalidToken, reasonIssuer},
	{validate.Error{Reason: "signature"}, kindInvalidToken, reasonSignature},
	{validate.Error{Reason: "unknown_key"}, kindInvalidToken, reasonUnknownKey},
	{validate.Error{Reason: "type"}, kindInvalidToken, reasonType},
}

// errorKind returns the answer kind and the Reason of err.
func errorKind(err error) (kind, Reason) {
	for _, e := range errorKinds {
		if errors.Is(err, e.err) {
			return e.kind, e.reason
		}
	}
	return kindInvalidToken, reasonInvalidToken
}

func kindOf(err error) kind {
	k, _ := errorKind(err)
	return k
}

// answer is the public part of a refusal: what the client sees.
type answer struct {
	status     int
	challenge  string // WWW-Authenticate value; "" sends none
	retryAfter string // Retry-After value; "" sends none
	body       string
	level      slog.Level // of the log record
}

// buildAnswers renders every fixed answer once.
func (m *Middleware) buildAnswers(base []string, retryAfter string) {
	ch := func(code challenge.ErrorCode, desc string, scopes []string) string {
		return challenge.Challenge{
			Realm: m.realm, Error: code, ErrorDescription: desc,
			Scope: scopes, ResourceMetadata: m.metadataURL,
		}.String()
	}
	// The terminal 403s (step-up bound, DenyUnlisted, tenant) refuse for
	// lack of authorization, so RFC 6750 §3 requires a challenge, but
	// they must not invite a new authorization: a Bearer challenge with
	// resource_metadata only (and realm), without error="insufficient_scope"
	// and without scope. Measured (docs/policy.md): the go-sdk v1.8.0 and
	// TypeScript SDK 1.32 clients start a new authorization on every
	// insufficient_scope 403, with or without scope, and stop on this one.
	terminal := challenge.Challenge{Realm: m.realm, ResourceMetadata: m.metadataURL}.String()
	debug, warn := slog.LevelDebug, slog.LevelWarn
	m.answers = [numKinds]answer{
		kindInvalidToken:      {http.StatusUnauthorized, ch(challenge.InvalidToken, descInvalidToken, base), "", bodyInvalidToken, debug},
		kindNoToken:           {http.StatusUnauthorized, ch("", "", base), "", bodyUnauthorized, debug},
		kindNoPrincipal:       {http.StatusUnauthorized, ch("", "", base), "", bodyUnauthorized, warn},
		kindMultipleTokens:    {http.StatusBadRequest, ch(challenge.InvalidRequest, descMultipleTokens, nil), "", bodyInvalidRequest, debug},
		kindMalformedHeader:   {http.StatusBadRequest, ch(challenge.InvalidRequest, descMalformedHeader, nil), "", bodyInvalidRequest, debug},
		kindTokenInQuery:      {http.StatusBadRequest, ch(challenge.InvalidRequest, descTokenInQuery, nil), "", bodyInvalidRequest, debug},
		kindOrigin:            {http.StatusForbidden, "", "", bodyOrigin, debug},
		kindUnavailable:       {http.StatusServiceUnavailable, "", retryAfter, bodyUnavailable, warn},
		kindTooLarge:          {http.StatusRequestEntityTooLarge, "", "", bodyTooLarge, debug},
		kindMalformedBody:     {http.StatusBadRequest, "", "", bodyParseError, debug},
		kindInvalidMessage:    {http.StatusBadRequest, "", "", bodyInvalidMessage, debug},
		kindBatch:             {http.StatusBadRequest, "", "", bodyBatch, debug},
		kindHeaderMismatch:    {http.StatusBadRequest, "", "", "", debug}, // body carries the id
		kindInvalidParams:     {http.StatusBadRequest, "", "", "", debug}, // body carries the id
		kindInsufficientScope: {http.StatusForbidden, "", "", bodyInsufficient, debug},
		kindStepUpExhausted:   {http.StatusForbidden, terminal, "", bodyInsufficient, warn},
		kindForbidden:         {http.StatusForbidden, terminal, "", bodyAccessDenied, debug},
		// Session binding (session.go): no challenge, the token is fine.
		kindUnknownSession:     {http.StatusNotFound, "", "", bodySessionNotFound, debug},
		kindSessionHeader:      {http.StatusBadRequest, "", "", bodyInvalidMessage, debug},
		kindSessionUnavailable: {http.StatusServiceUnavailable, "", retryAfter, bodyUnavailable, debug}, // the store failure itself: one Warn per reason (session.go)
		kindUnknownTask:        {http.StatusOK, "", "", "", debug},                                      // body carries the id; 400 from 2026-07-28
		kindMethodNotFound:     {http.StatusNotFound, "", "", "", debug},                                // body carries the id (notfound.go)
		kindMethodNotAllowed:   {http.StatusMethodNotAllowed, "", "", bodyMethodNotAllowed, debug},      // Allow: httpmethod.go
		kindBadGateway:         {http.StatusBadGateway, "", "", bodyBadGateway, warn},                   // a 101 from the next handler (session.go)
		kindToolChanged:        {http.StatusOK, "", "", "", warn},                                       // body carries the id and the tool; 400 from 2026-07-28 (pins.go)
	}
}

// retryAfterValue renders d as whole seconds, rounded up, at least 1.
func retryAfterValue(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// refusal is one refusal, carried from the check that decides it to the
// answer, the log line and Config.OnDecision. The check sets the cause and
// what it knows of the request; [Middleware.refuse] (or
// [Middleware.insufficient]) resolves the answer once, and
// [Middleware.send] writes the log line, the [Decision] and the answer
// from this one value.
type refusal struct {
	err  error      // the internal cause: picks the answer and the Reason (errorKinds); never sent
	p    *Principal // the caller; nil when refused before (or without) a valid token
	g    *grant     // the operation, labelling the log line and the decision; nil: unknown
	id   []byte     // the raw JSON-RPC id, echoed only in the -32020, -32602 and task bodies
	rule string     // the Rule that decided (rules.go), "" for none
	args []byte     // the raw params.arguments of a rule decision, for Decision.ArgumentsSHA256
	tool string     // the tool of errToolChanged, named in its body (pins.go)

	reason Reason // resolved with the answer
	answer        // what the client is sent; its level is the log record's
}

// refuse resolves rf's answer and Reason from rf.err (errorKinds, the
// DPoP answers) and sends it.
func (m *Middleware) refuse(w http.ResponseWriter, r *http.Request, rf *refusal) {
	k, reason := errorKind(rf.err)
	a := &m.answers[k]
	if m.dpop != nil {
		a, reason = m.dpopAnswer(w, r, rf.err, k, reason)
	}
	rf.reason, rf.answer = reason, *a
	switch k {
	case kindHeaderMismatch:
		rf.body = bodyMismatchHead + echoID(rf.id) + bodyMismatchTail
	case kindInvalidParams:
		rf.body = bodyMismatchHead + echoID(rf.id) + bodyInvalidParamsTail
	case kindMethodNotFound:
		rf.body = bodyMismatchHead + echoID(rf.id) + bodyMethodNotFoundTail
	case kindUnknownTask:
		rf.body = bodyMismatchHead + echoID(rf.id) + bodyTaskNotFoundTail
		if isModern(r.Header) {
			rf.status = http.StatusBadRequest // SEP-2575: -32602 is 400
		}
	case kindToolChanged:
		rf.body = toolChangedBody(rf.id, rf.tool)
		if isModern(r.Header) {
			rf.status = http.StatusBadRequest // SEP-2575: -32602 is 400
		}
	}
	m.send(w, r, rf)
}

// send is where every refusal leaves the middleware: the log line
// (logging.go), the decision (decision.go), then the answer.
func (m *Middleware) send(w http.ResponseWriter, r *http.Request, rf *refusal) {
	m.logRefusal(r, rf)
	m.report(r.Context(), r.Header, rf)
	writeAnswer(w, rf.status, rf.challenge, rf.retryAfter, rf.body)
}

// scopesOf returns the scopes of the insufficient_scope [Error] in err's
// chain.
func scopesOf(err error) (required, missing []string) {
	if se, ok := scopeErrorOf(err); ok {
		return se.Required, se.Missing
	}
	return nil, nil
}

// scopeErrorOf returns the insufficient_scope [Error] in err's chain.
func scopeErrorOf(err error) (Error, bool) {
	var se Error
	if errors.As(err, &se) && se.Reason == "insufficient_scope" {
		return se, true
	}
	return Error{}, false
}

// echoID returns id as an answer echoes it: id if it is a JSON string or
// number (JSON-RPC 2.0 §4) of reasonable size (echoable), else null.
func echoID(id []byte) string {
	if id = echoable(id); id == nil {
		return "null"
	}
	return string(id)
}

// echoable returns id if it is a JSON string or number (JSON-RPC 2.0 §4)
// of at most 256 bytes, else nil: the one rule of which ids an answer
// echoes (the middleware's, and the next handler's through [Decision].ID).
func echoable(id []byte) []byte {
	if len(id) == 0 || len(id) > 256 {
		return nil
	}
	if c := id[0]; c == '"' || c == '-' || ('0' <= c && c <= '9') {
		return id
	}
	return nil
}

// writeAnswer writes a refusal the way challenge.Write does: at most one
// WWW-Authenticate line, no-store, a small fixed JSON body.
func writeAnswer(w http.ResponseWriter, status int, wwwAuth, retryAfter, body string) {
	h := w.Header()
	if wwwAuth != "" {
		setChallenges(h, wwwAuth)
	} else {
		h.Del("WWW-Authenticate")
	}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
