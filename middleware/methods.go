package middleware

import (
	"cmp"
	"slices"
)

const methodResourcesSubscribe = "resources/subscribe"

// methodDefault is the documented policy default of one client-to-server
// method of MCP (docs/policy.md, "Defaults of every method"). Every request
// method and client notification of the 2025-11-25 and 2026-07-28 schemas
// has one row; a method in no row is unlisted (answered 403 under
// OperationPolicy.DenyUnlisted).
type methodDefault struct {
	method string
	// inherits names the method whose OperationPolicy.Methods scopes this
	// one also needs, when it reaches what that method protects.
	inherits string
}

// methodDefaults lists the client-to-server requests (ClientRequest) and
// notifications (ClientNotification) of schema/2025-11-25/schema.ts and
// schema/2026-07-28/schema.ts, and 2024-11-05 through 2025-06-18's, which
// they include. Every method needs Config.Scopes and its own
// OperationPolicy.Methods entry; the rows below add what it inherits.
var methodDefaults = []methodDefault{
	// Lifecycle and discovery: base scopes only, so that a client can
	// always connect with the scopes of the 401 challenge.
	{method: "initialize"},                // 2025-11-25
	{method: "ping"},                      // 2025-11-25
	{method: "server/discover"},           // 2026-07-28
	{method: "notifications/initialized"}, // 2025-11-25
	{method: "notifications/cancelled"},   // both
	{method: "notifications/progress"},    // 2025-11-25
	{method: "notifications/roots/list_changed"},
	{method: "notifications/tasks/status"}, // 2025-11-25
	{method: "logging/setLevel"},           // 2025-11-25
	// Lists: their Methods entry.
	{method: "tools/list"},
	{method: "prompts/list"},
	{method: "resources/list"},
	{method: "resources/templates/list"},
	// Named operations: Methods entry plus Tools, Prompts or Resources.
	{method: methodToolsCall},
	{method: methodPromptsGet},
	{method: methodResourceRead},
	// Subscribing to a resource reveals its updates: it needs what
	// resources/read of the same URI needs (method scopes and the URI's
	// resource rule; DenyUnlisted refuses an unlisted URI).
	{method: methodResourcesSubscribe, inherits: methodResourceRead}, // 2025-11-25
	// Unsubscribing reveals and grants nothing.
	{method: "resources/unsubscribe"}, // 2025-11-25
	// 2026-07-28's stream of list_changed and resources/updated
	// notifications; the resource URIs sit in an array the middleware
	// does not read, so list it in Methods if updates are sensitive.
	{method: "subscriptions/listen"},
	// Completion of prompt or resource-template arguments; params.ref is
	// not read. List it in Methods if argument values are sensitive.
	{method: "completion/complete"},
	// 2025-11-25 tasks: a client-side task is a task-augmented tools/call,
	// so reading or cancelling one needs tools/call's method scopes.
	{method: "tasks/get", inherits: methodToolsCall},
	{method: "tasks/result", inherits: methodToolsCall},
	{method: "tasks/list", inherits: methodToolsCall},
	{method: "tasks/cancel", inherits: methodToolsCall},
}

// applyMethodDefaults sets the grant of every inheriting method: base
// scopes, the inherited method's Methods scopes, then its own.
func (m *Middleware) applyMethodDefaults(cfg *Config, p *policy) {
	for _, d := range methodDefaults {
		if _, ok := p.methods[d.method]; !ok {
			p.methods[d.method] = &grant{op: p.base, method: d.method}
		}
		if d.inherits == "" {
			continue
		}
		methods := cfg.Operations.Methods
		p.methods[d.method] = &grant{op: m.newOperation(cfg.Scopes, methods[d.inherits], methods[d.method]), method: d.method}
	}
}

// resourceRules are the compiled resource rules of one method.
type resourceRules struct {
	exact    map[string]*grant
	prefix   []prefixRule // longest first
	unlisted *grant       // a URI no rule matches
}

// compileSubscribe builds the resource rules of resources/subscribe: each
// needs what resources/read of the URI needs, plus Methods of subscribe.
func (m *Middleware) compileSubscribe(cfg *Config, p *policy) resourceRules {
	op := cfg.Operations
	rr := resourceRules{exact: map[string]*grant{}}
	for _, r := range op.Resources {
		g := &grant{
			op:     m.newOperation(cfg.Scopes, op.Methods[methodResourceRead], op.Methods[methodResourcesSubscribe], r.Scopes),
			method: methodResourcesSubscribe, name: r.URI,
		}
		if r.Prefix {
			rr.prefix = append(rr.prefix, prefixRule{r.URI, g})
		} else {
			rr.exact[r.URI] = g
		}
	}
	slices.SortStableFunc(rr.prefix, func(a, b prefixRule) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	rr.unlisted = &grant{op: p.methods[methodResourcesSubscribe].op, method: methodResourcesSubscribe, name: Unlisted}
	return rr
}
