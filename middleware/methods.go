package middleware

import ()

const (
	methodResourcesSubscribe = "resources/subscribe"
	methodCompletion         = "completion/complete"
	methodListen             = "subscriptions/listen"
)

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
	// Completion of prompt or resource-template arguments reveals what
	// the prompt or template offers: with params.ref a prompt, it needs
	// what prompts/get of that prompt needs; with a resource template,
	// resources/read's Methods scopes (compileCompletion). Plus its own
	// Methods entry, always.
	{method: methodCompletion},
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
	prefix   prefixSet[*grant]
	unlisted *grant // a URI no rule matches
}

// compileSubscribe builds the resource rules of resources/subscribe: each
// needs what resources/read of the URI needs, plus Methods of subscribe.
func (m *Middleware) compileSubscribe(cfg *Config, p *policy) resourceRules {
	return m.compileResourceRules(cfg, methodResourcesSubscribe, p.methods[methodResourcesSubscribe])
}

// compileResourceRules builds the resource rules of method, which needs
// what resources/read of a URI needs plus its own Methods entry; unl is
// its grant for a URI no rule matches.
func (m *Middleware) compileResourceRules(cfg *Config, method string, unl *grant) resourceRules {
	op := cfg.Operations
	rr := resourceRules{exact: map[string]*grant{}}
	var prefixes []prefixRule
	for _, r := range op.Resources {
		g := &grant{
			op:     m.newOperation(cfg.Scopes, op.Methods[methodResourceRead], op.Methods[method], r.Scopes),
			method: method, name: r.URI,
		}
		if r.Prefix {
			prefixes = append(prefixes, prefixRule{r.URI, g})
		} else {
			rr.exact[r.URI] = g
		}
	}
	rr.prefix = newPrefixSet(prefixes)
	rr.unlisted = &grant{op: unl.op, method: method, name: unlistedLabel}
	return rr
}

// completionRules are the grants of completion/complete by params.ref.
type completionRules struct {
	prompts        map[string]*grant // ref/prompt, by name
	unlistedPrompt *grant            // ref/prompt naming a prompt not in Prompts
	template       *grant            // ref/resource of a template no rule matches
	templates      resourceRules     // ref/resource, by the template's literal part
}

// Reference types of completion/complete (MCP schema: PromptReference,
// ResourceTemplateReference).
const (
	refPrompt   = "ref/prompt"
	refResource = "ref/resource"
)

// compileCompletion builds the grants of completion/complete: for a prompt
// reference, what prompts/get of the prompt needs (Methods of prompts/get
// and the prompt's Prompts entry), plus Methods of completion/complete;
// for a resource-template reference, what resources/read of the resources
// the template expands to needs (Methods of resources/read and the
// matching resource rule, [policy.template]), plus Methods of
// completion/complete.
func (m *Middleware) compileCompletion(cfg *Config, p *policy) completionRules {
	op := cfg.Operations
	own := op.Methods[methodCompletion]
	cr := completionRules{prompts: map[string]*grant{}}
	for name, s := range op.Prompts {
		cr.prompts[name] = &grant{op: m.newOperation(cfg.Scopes, op.Methods[methodPromptsGet], own, s), method: methodCompletion, name: name}
	}
	cr.unlistedPrompt = &grant{op: m.newOperation(cfg.Scopes, op.Methods[methodPromptsGet], own), method: methodCompletion, name: unlistedLabel}
	cr.template = &grant{op: m.newOperation(cfg.Scopes, op.Methods[methodResourceRead], own), method: methodCompletion}
	cr.templates = m.compileResourceRules(cfg, methodCompletion, cr.template)
	return cr
}

// complete returns the grant of a completion/complete request msg; mg is
// the method's own grant, for a request without a usable reference (the
// SDK refuses it as invalid params).
func (p *policy) complete(msg *message, mg *grant) (*grant, error) {
	switch {
	case !msg.ref.present || !msg.ref.typ.present:
		return p.unlisted(mg)
	case msg.ref.typ.notString():
		return mg, errNotString
	case string(msg.ref.typ.v) == refPrompt:
		return p.named(p.completion.prompts, msg.ref.name, mg, p.completion.unlistedPrompt)
	case string(msg.ref.typ.v) == refResource:
		t := &p.completion.templates
		switch {
		case msg.ref.uri.notString():
			return mg, errNotString
		case !msg.ref.uri.present:
			return p.unlisted(p.completion.template)
		}
		return p.template(string(msg.ref.uri.v), p.completion.template, t.exact, &t.prefix, t.unlisted)
	}
	return p.unlisted(mg)
}
