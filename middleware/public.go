package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// PublicOperations lists the MCP operations served without a token
// (OperationPolicy.Public): discovery, listing, or a deliberately public,
// non-sensitive tool. The zero value lists none, and then every request
// needs a valid token, as before.
//
// # The trade-off
//
// A request without an Authorization header is no longer refused at once:
// to know its operation, the middleware reads and parses its body first,
// bounded by Config.MaxBodyBytes, so an unauthenticated client can make the
// server read up to that many bytes per request (cap it lower when public
// operations are on). The request is served only when it is a single,
// well-formed JSON-RPC message whose operation is listed here and whose MCP
// headers agree with the body. A request that is not one gets the protocol
// answer a token would get, since it depends only on the request's own
// bytes: 413 for a body over the limit, 400 with JSON-RPC -32700, -32600
// (not a single message) or, for MCP headers that disagree with the body,
// -32020 (-32602 for a 2026-07-28 request without the _meta protocol
// version), and 404 with -32601 for a 2026-07-28 request naming a method
// that revision does not define and the policy does not name
// (errMethodNotFound). A well-formed message whose operation is not
// public gets the same 401 challenge as before, so nothing protected is
// disclosed to a client without a token. With no public operation, every request without
// a token gets the 401 first, before its body is read. Its handler sees a [Principal]
// with Anonymous set and nothing else: it must serve only public data.
//
// A token that is sent is always validated: a bad one is 401 even for a
// public operation, and a valid one makes the request authenticated as
// usual (its handler sees that principal). Public operations need no scope
// from anyone: a public tool, prompt or resource is exempt from the
// scopes of its method (Methods["tools/call"], …) and from resource prefix
// rules, while a method, name or exact resource rule that both lists
// scopes and is public is refused by [New] as contradictory. Requests
// other than POST (an SSE GET stream, a session DELETE) are public only in
// an anonymous session.
//
// With stateful MCP sessions, a session created without a token belongs to
// the anonymous principal ([SessionConfig]): the client's JSON-RPC
// responses and notifications in it, its GET stream and its DELETE pass
// without a token. Once the client has a token, it must start a new
// session (the old one is 404 with a token).
type PublicOperations struct {
	// Methods are JSON-RPC methods served without a token, such as
	// "initialize", "notifications/initialized", "ping", "server/discover"
	// or "tools/list". tools/call, prompts/get and resources/read cannot
	// be listed here: name the tools, prompts and resources instead. Nor
	// can the methods that reach what those names protect:
	// completion/complete, resources/subscribe, subscriptions/listen and
	// tasks/* ([New] refuses them). They follow the names instead, unless
	// OperationPolicy.Methods gives them scopes of their own:
	// resources/subscribe of a URI in Resources, completion/complete of
	// a prompt reference (ref/prompt) naming one of Prompts, and
	// subscriptions/listen whose resourceSubscriptions (if any) are all in
	// Resources are public, and tasks/get, tasks/update and tasks/cancel (tasks/result
	// before 2026-07-28) are served without a token for the tasks that
	// requests without a token created (the task binding answers any
	// other task ID "Task not found", as with a token).
	Methods []string
	// Tools are tools/call params.name values served without a token.
	Tools []string
	// Prompts are prompts/get params.name values served without a token.
	Prompts []string
	// Resources are resources/read params.uri values served without a
	// token, compared byte for byte (no prefixes).
	Resources []string
}

// reasonPublic: a request without a token was passed to the next handler
// because its operation is public (OperationPolicy.Public). Its
// [Decision.Principal] is anonymous.
const reasonPublic Reason = "public"

func (po PublicOperations) clone() PublicOperations {
	return PublicOperations{
		Methods:   slices.Clone(po.Methods),
		Tools:     slices.Clone(po.Tools),
		Prompts:   slices.Clone(po.Prompts),
		Resources: slices.Clone(po.Resources),
	}
}

func (po PublicOperations) empty() bool {
	return len(po.Methods) == 0 && len(po.Tools) == 0 && len(po.Prompts) == 0 && len(po.Resources) == 0
}

// checkPublic refuses public operations that would need a scope, and names
// that cannot be public.
func checkPublic(op *OperationPolicy) error {
	po := op.Public
	for _, name := range po.Methods {
		switch {
		case name == "":
			return fmt.Errorf("%w: Operations.Public.Methods has an empty name", errConfig)
		case name == methodToolsCall || name == methodPromptsGet || name == methodResourceRead:
			return fmt.Errorf("%w: Operations.Public.Methods cannot make %s public; list names in Tools, Prompts or Resources", errConfig, name)
		case inheritsRules(name) != "":
			return fmt.Errorf("%w: Operations.Public.Methods cannot make %s public: %s; remove it from Public.Methods (it needs a token)", errConfig, name, inheritsRules(name))
		case len(op.Methods[name]) > 0:
			return fmt.Errorf("%w: Operations.Public.Methods has %s, which Operations.Methods gives scopes", errConfig, name)
		}
	}
	named := []struct {
		field  string
		names  []string
		scopes map[string][]string
	}{
		{"Tools", po.Tools, op.Tools},
		{"Prompts", po.Prompts, op.Prompts},
	}
	for _, n := range named {
		for _, name := range n.names {
			switch {
			case name == "":
				return fmt.Errorf("%w: Operations.Public.%s has an empty name", errConfig, n.field)
			case len(n.scopes[name]) > 0:
				return fmt.Errorf("%w: Operations.Public.%s has %q, which Operations.%s gives scopes", errConfig, n.field, name, n.field)
			}
		}
	}
	for _, uri := range po.Resources {
		if uri == "" {
			return fmt.Errorf("%w: Operations.Public.Resources has an empty URI", errConfig)
		}
		for _, r := range op.Resources {
			if !r.Prefix && r.URI == uri && len(r.Scopes) > 0 {
				return fmt.Errorf("%w: Operations.Public.Resources has %q, which a resource rule gives scopes", errConfig, uri)
			}
		}
	}
	return nil
}

// inheritsRules says why method reaches what per-name rules protect, so
// that making it public would skip them for everyone; "" if it does not.
func inheritsRules(method string) string {
	switch {
	case method == methodCompletion:
		return "its completions reveal what the Prompts and Resources rules protect"
	case method == methodResourcesSubscribe:
		return "it needs what resources/read of the URI needs (the Resources rules)"
	case method == methodListen:
		return "its stream carries the updates of resources the Resources rules protect"
	case strings.HasPrefix(method, "tasks/"):
		return "tasks carry tools/call results (the Tools rules)"
	}
	return ""
}

// publicSet is the compiled PublicOperations: the grant of each public
// operation, needing no scope, labelled as a [Decision] reports it.
type publicSet struct {
	methods, tools, prompts, resources map[string]*grant
	// subscribe and complete are resources/subscribe of a public resource
	// and completion/complete of a public prompt's arguments; nil when
	// OperationPolicy.Methods gives that method scopes of its own.
	subscribe, complete map[string]*grant
	// listen is subscriptions/listen's grant, nil when
	// OperationPolicy.Methods gives it scopes: public when every URI of
	// its resourceSubscriptions is a public resource.
	listen *grant
}

// newPublicSet compiles po, or returns nil when it lists nothing.
func (m *Middleware) newPublicSet(po PublicOperations) *publicSet {
	if po.empty() {
		return nil
	}
	none := m.newOperation()
	set := func(method string, names []string, label bool) map[string]*grant {
		out := make(map[string]*grant, len(names))
		for _, n := range names {
			g := &grant{op: none, method: method, name: n}
			if !label {
				g.method, g.name = n, ""
			}
			out[n] = g
		}
		return out
	}
	ps := &publicSet{
		methods:   set("", po.Methods, false),
		tools:     set(methodToolsCall, po.Tools, true),
		prompts:   set(methodPromptsGet, po.Prompts, true),
		resources: set(methodResourceRead, po.Resources, true),
	}
	// Subscribing to a public resource reveals no more than reading it,
	// and completing a public prompt's arguments no more than getting
	// it: they are public too, unless the method has scopes of its own.
	if len(m.cfg.Operations.Methods[methodResourcesSubscribe]) == 0 {
		ps.subscribe = set(methodResourcesSubscribe, po.Resources, true)
	}
	if len(m.cfg.Operations.Methods[methodCompletion]) == 0 {
		ps.complete = set(methodCompletion, po.Prompts, true)
	}
	if len(m.cfg.Operations.Methods[methodListen]) == 0 {
		ps.listen = &grant{op: none, method: methodListen}
	}
	return ps
}

// lookup returns the public grant of msg, or nil when its operation is not
// public.
func (s *publicSet) lookup(msg *message) *grant {
	if s == nil || !msg.method.present {
		return nil
	}
	switch string(msg.method.v) {
	case methodToolsCall:
		if msg.name.str {
			return s.tools[string(msg.name.v)]
		}
	case methodPromptsGet:
		if msg.name.str {
			return s.prompts[string(msg.name.v)]
		}
	case methodResourceRead:
		if msg.uri.str {
			return s.resources[string(msg.uri.v)]
		}
	case methodResourcesSubscribe:
		if s.subscribe != nil && msg.uri.str {
			return s.subscribe[string(msg.uri.v)]
		}
	case methodListen:
		if s.listen == nil {
			return nil
		}
		if msg.subs != nil {
			uris, ok := strictjson.Strings(msg.subs)
			if !ok {
				return nil
			}
			for _, u := range uris {
				if s.resources[u] == nil {
					return nil
				}
			}
		}
		return s.listen
	case methodCompletion:
		if s.complete != nil && msg.ref.present && msg.ref.typ.str && string(msg.ref.typ.v) == refPrompt && msg.ref.name.str {
			return s.complete[string(msg.ref.name.v)]
		}
	default:
		return s.methods[string(msg.method.v)]
	}
	return nil
}

// apply returns the grant of msg and the policy's verdict (g, err from
// policy.lookup), replaced by the public grant when msg's operation is
// public. A public operation is never refused for being unlisted.
func (s *publicSet) apply(msg *message, g *grant, err error) (*grant, error) {
	if s == nil || (err != nil && !errors.Is(err, errNotListed)) {
		return g, err
	}
	if pg := s.lookup(msg); pg != nil {
		return pg, nil
	}
	return g, err
}

// isAnonymous reports whether r has no Authorization header at all, the
// only case in which a public operation is served without a token. A
// request with another scheme (Basic, DPoP) or a malformed header keeps
// its answer.
func isAnonymous(r *http.Request, err error) bool {
	return errors.Is(err, errNoToken) && len(r.Header.Values("Authorization")) == 0
}

// servePublic serves a request without a token when its operation is
// public, and answers the usual 401 otherwise (origin and query-token
// checks have passed). The body is read, bounded by Config.MaxBodyBytes,
// before any token is seen: see [PublicOperations].
func (m *Middleware) servePublic(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Method != http.MethodPost {
		if m.isAnonymousSession(r) { // its GET stream, its DELETE (session.go)
			m.admit(w, r, next, &Principal{Anonymous: true}, &message{})
			return
		}
		closeUnread(w, r) // a tokenless GET or DELETE body is not read
		m.refuse(w, r, &refusal{err: errNoToken})
		return
	}
	body, err := readBody(r, m.cfg.MaxBodyBytes)
	if err != nil {
		closeUnread(w, r) // issue #11: the rest of the body is not read
		if !errors.Is(err, errBodyTooLarge) {
			err = errNoToken
		}
		m.refuse(w, r, &refusal{err: err}) // 413, as with a token
		return
	}
	// The protocol answers that depend only on the request's own bytes are
	// the ones a token would get (400 with -32700, -32600, -32020 or
	// -32602): they reveal nothing protected, and a client without a token
	// learns what is wrong with its request before it is asked for one.
	var msg message
	if err := parseMessageWith(&m.json, body, &msg); err != nil {
		m.refuse(w, r, &refusal{err: err})
		return
	}
	if err := checkHeaders(r.Header, &msg); err != nil {
		g, _ := m.policy.lookup(&msg) // labels only
		m.refuse(w, r, &refusal{err: err, g: g, id: msg.id})
		return
	}
	g := m.public.lookup(&msg)
	switch {
	case g != nil:
	case (!msg.method.present || msg.id == nil) && m.isAnonymousSession(r):
		// A response or notification of the client in an anonymous
		// session (sampling, elicitation, roots): as public as the
		// session.
		g, _ = m.policy.lookup(&msg) // labels only
		if g == nil {
			g = m.policy.none
		}
	case m.unknownMethod(r.Header, &msg) || removedTaskMethod(r.Header, &msg):
		// What the server answers a method it does not have, which
		// reveals nothing protected (notfound.go).
		g, _ = m.policy.lookup(&msg) // labels only
		m.refuse(w, r, &refusal{err: errMethodNotFound, g: g, id: msg.id})
		return
	case m.anonymousTaskOp(&msg):
		// tasks/get, tasks/update, tasks/cancel (tasks/result before
		// 2026-07-28) of the tasks that public tool calls created: the
		// task binding (admit) answers any other task ID
		// "Task not found", as it would with a token.
		g, _ = m.policy.lookup(&msg) // labels only
	default:
		g, _ = m.policy.lookup(&msg) // labels only
		m.refuse(w, r, &refusal{err: errNoToken, g: g})
		return
	}
	// Passed to next with the anonymous principal, once its session ID is
	// the anonymous principal's (or absent).
	m.admit(w, r, next, &Principal{Anonymous: true, grant: g}, &msg)
}

// Permits reports whether p may call an operation under the operation
// policy, as [Middleware.Handler] would decide for a request naming it:
// method is the JSON-RPC method ("tools/call", "prompts/get",
// "resources/read", "tools/list", …) and name the tool or prompt name or
// the resource URI (ignored for other methods). A public operation is
// permitted to everyone; anything else needs a principal that is not
// anonymous and holds the scopes (Config.Scopes, the method's and the
// name's, with Config.ScopeImplies). An unlisted name is refused under
// OperationPolicy.DenyUnlisted, and a non-canonical URI while resource
// rules exist. A nil p counts as anonymous. List answers are shown by the
// same reading of the policy, which agrees with it under [ListHide]; it
// never replaces the check at call time.
func (m *Middleware) Permits(p *Principal, method, name string) bool {
	msg := message{method: stringField(method)}
	switch method {
	case methodToolsCall, methodPromptsGet:
		msg.name = stringField(name)
	case methodResourceRead:
		msg.uri = stringField(name)
	}
	if m.public.lookup(&msg) != nil {
		return true
	}
	g, err := m.policy.lookup(&msg)
	if err != nil || p == nil || p.Anonymous {
		return false
	}
	return m.missing(p.Scopes, g.op.scopes) == nil
}
