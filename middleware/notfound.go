package middleware

import (
	"errors"
	"net/http"
)

// Unknown methods of the 2026-07-28 revision (MCP basic/transports
// streamable-http, SEP-2575): "If the server does not implement the
// requested RPC method, it MUST respond with 404 Not Found and a JSON-RPC
// error with code -32601 (Method not found)".

// errMethodNotFound: a 2026-07-28 request names a method that revision
// does not define, answered without reaching the server as the server
// must answer it: 404 with JSON-RPC -32601 "Method not found" and the
// request's id. The middleware answers it in two cases only: a request
// without a token while public operations are configured, for a method
// that is neither a 2026-07-28 request method nor named in
// OperationPolicy.Methods or Public.Methods (initialize, ping,
// logging/setLevel, resources/subscribe, resources/unsubscribe, tasks/list
// and any unknown name), so that such a client learns the method does not
// exist before it is asked for a token; and tasks/result of a
// 2026-07-28 request, with or without a token (the tasks extension, SEP-2663,
// removed it: the result is inlined in tasks/get), which the task binding
// would otherwise answer "Task not found".
var errMethodNotFound = errors.New("middleware: method not found")

// reasonMethodNotFound: errMethodNotFound (404).
const reasonMethodNotFound Reason = "method_not_found"

const (
	bodyMethodNotFoundTail = `,"error":{"code":-32601,"message":"Method not found"}}`
	methodTasksResult      = "tasks/result"
	// methodsRevision is the revision whose request methods
	// revisionMethods lists; a request of a later one keeps its 401.
	methodsRevision = "2026-07-28"
)

// revisionMethods are the client-to-server request methods of
// schema/2026-07-28/schema.ts (ClientRequest), with those of its tasks
// extension (SEP-2663: tasks/get, tasks/update, tasks/cancel).
var revisionMethods = map[string]struct{}{
	"server/discover": {}, "tools/list": {}, methodToolsCall: {}, "prompts/list": {}, methodPromptsGet: {},
	"resources/list": {}, "resources/templates/list": {}, methodResourceRead: {}, methodCompletion: {},
	"subscriptions/listen": {}, "tasks/get": {}, "tasks/update": {}, "tasks/cancel": {},
}

// unknownMethod reports whether msg, a request (it has an id) without a
// token, names a method that its 2026-07-28 revision does not define and
// that the operation policy does not name either: the server would answer
// it 404 -32601, so the middleware does (public operations only).
func (m *Middleware) unknownMethod(h http.Header, msg *message) bool {
	if !msg.method.present || msg.id == nil || h.Get(hdrProtocolVersion) != methodsRevision {
		return false
	}
	if _, ok := revisionMethods[string(msg.method.v)]; ok {
		return false
	}
	_, named := m.cfg.Operations.Methods[string(msg.method.v)]
	return !named
}

// removedTaskMethod reports whether msg is a 2026-07-28 tasks/result,
// which the tasks extension removed (errMethodNotFound).
func removedTaskMethod(h http.Header, msg *message) bool {
	return string(msg.method.v) == methodTasksResult && isModern(h)
}

// anonymousTaskOp reports whether a task operation without a token is
// served for the tasks the anonymous principal created (public tools):
// yes unless OperationPolicy.Methods gives the method scopes of its own.
func (m *Middleware) anonymousTaskOp(msg *message) bool {
	return isTaskOp(msg.method.v) && len(m.cfg.Operations.Methods[string(msg.method.v)]) == 0
}
