package middleware

import (
	"fmt"
	"strings"
)

// ListMode chooses what the entries of list answers (tools/list,
// prompts/list, resources/list, resources/templates/list) show:
// Config.Lists. The SDK adapters (gosdk, mcpgo) and a proxy apply it
// through [Middleware.ListEntry]; the middleware alone cannot, since it
// never reads answers. Whatever the mode, an entry that no token could
// ever reach is never listed (docs/policy.md, "Lists").
type ListMode int

const (
	// ListAnnotate lists every entry a client could obtain the scopes
	// for, each annotated with what the operation policy requires
	// (SEP-1488 securitySchemes), so that a client asks for those scopes
	// up front or expects a step-up. The default.
	ListAnnotate ListMode = iota
	// ListHide lists only what the current token may call (SEP-1881),
	// annotated as with ListAnnotate: exactly what Middleware.Handler
	// would authorize for the same token.
	ListHide
	// ListOff neither annotates nor hides by token; only entries no token
	// could reach are left out.
	ListOff
)

// String returns "annotate", "hide" or "off".
func (l ListMode) String() string {
	switch l {
	case ListAnnotate:
		return "annotate"
	case ListHide:
		return "hide"
	case ListOff:
		return "off"
	}
	return fmt.Sprintf("ListMode(%d)", int(l))
}

// MarshalText returns [ListMode.String], for flags and config files.
func (l ListMode) MarshalText() ([]byte, error) {
	if l < ListAnnotate || l > ListOff {
		return nil, fmt.Errorf("%w: unknown ListMode %d", errConfig, int(l))
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads "annotate", "hide" or "off" (flag.TextVar, YAML).
func (l *ListMode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "annotate":
		*l = ListAnnotate
	case "hide":
		*l = ListHide
	case "off":
		*l = ListOff
	default:
		return fmt.Errorf("%w: list mode must be annotate, hide or off", errConfig)
	}
	return nil
}

// SecurityScheme is one element of a securitySchemes array (SEP-1488):
// {"type":"oauth2","scopes":[…]} for an operation that needs a token,
// {"type":"noauth"} for a public one.
type SecurityScheme struct {
	Type   string   `json:"type"`
	Scopes []string `json:"scopes,omitempty"`
}

// SecurityScheme types.
const (
	schemeOAuth2 = "oauth2"
	schemeNoAuth = "noauth"
)

// ListVerdict is [Middleware.ListEntry]'s decision about one list entry
// for one principal. SecuritySchemes is shared with the middleware: do
// not modify it.
type ListVerdict struct {
	// Listed reports whether the entry is shown.
	Listed bool
	// SecuritySchemes is the entry's annotation, nil under [ListOff]
	// and when the entry is not listed: [{"type":"noauth"}] for a public
	// operation, else [{"type":"oauth2","scopes":[…]}] with every scope
	// the operation needs (base, method and the entry's own, as the 403
	// of a call without them would name).
	SecuritySchemes []SecurityScheme
}

// Lists answered per entry by [Middleware.ListEntry].
const (
	methodToolsList     = "tools/list"
	methodPromptsList   = "prompts/list"
	methodResourcesList = "resources/list"
	methodTemplatesList = "resources/templates/list"
)

// ListEntry decides, for principal p (nil or anonymous: no token), how the
// list method list shows the entry name: a tool name ("tools/list"), a
// prompt name ("prompts/list"), a resource URI ("resources/list") or a
// URI template ("resources/templates/list"). It is the one reading of the
// operation policy for lists, used by the gosdk and mcpgo adapters and by
// proxies rewriting list answers, in the mode of Config.Lists:
//
//   - An entry no token could ever reach is never listed: refused by
//     OperationPolicy.DenyUnlisted, a resource URI that cannot be put in
//     canonical form while resource rules exist, or an operation needing
//     a scope that no entry of Metadata.ScopesSupported satisfies (with
//     Config.ScopeImplies) and p's token does not hold either; an unknown
//     list method too.
//   - [ListHide] lists exactly what p may call, as [Middleware.Permits]
//     (and so Middleware.Handler) decides for a request naming it.
//   - [ListAnnotate] and [ListOff] list every other entry too: so they
//     list everything ListHide lists.
//   - [ListAnnotate] and [ListHide] annotate what they list.
//
// A template's entry follows the resources it expands to: the resource
// rules matching its literal part (up to the first "{"): the exact and
// prefix rules of that URI when the rest of the template only adds a
// query or fragment ("{?…}", "{&…}", "{#…}"), otherwise the longest
// prefix rule the literal part falls under, or no rule. ListEntry never
// replaces the check at call time.
func (m *Middleware) ListEntry(p *Principal, list, name string) ListVerdict {
	g, public, ok := m.entryGrant(list, name)
	if !ok {
		return ListVerdict{}
	}
	schemes := noAuthSchemes
	if !public {
		schemes = g.op.schemes
		permitted := p != nil && !p.Anonymous && m.missing(p.Scopes, g.op.scopes) == nil
		if !permitted && (m.cfg.Lists == ListHide || !m.obtainable(g.op)) {
			return ListVerdict{}
		}
	}
	if m.cfg.Lists == ListOff {
		schemes = nil
	}
	return ListVerdict{Listed: true, SecuritySchemes: schemes}
}

var noAuthSchemes = []SecurityScheme{{Type: schemeNoAuth}}

// entryGrant returns the grant of a call of the entry name of list, and
// whether it is public; false when no token could reach it.
func (m *Middleware) entryGrant(list, name string) (g *grant, public, ok bool) {
	var msg message
	switch list {
	case methodToolsList:
		msg.method, msg.name = stringField(methodToolsCall), stringField(name)
	case methodPromptsList:
		msg.method, msg.name = stringField(methodPromptsGet), stringField(name)
	case methodResourcesList:
		msg.method, msg.uri = stringField(methodResourceRead), stringField(name)
	case methodTemplatesList:
		g, err := m.policy.template(name, m.policy.methods[methodResourceRead], m.policy.resExact, m.policy.resPrefix, m.policy.unlistedResource)
		return g, false, err == nil
	default:
		return nil, false, false
	}
	if m.public.lookup(&msg) != nil {
		return nil, true, true
	}
	g, err := m.policy.lookup(&msg)
	return g, false, err == nil
}

// obtainable reports whether a token could hold op's scopes: each is
// satisfied by an entry of Metadata.ScopesSupported (an empty list
// restricts nothing: RFC 9728 §2 makes it optional).
func (m *Middleware) obtainable(op *operation) bool {
	supported := m.cfg.Metadata.ScopesSupported
	return len(supported) == 0 || m.missing(supported, op.scopes) == nil
}

// template returns the grant of a resource template tmpl under one
// method's resource rules (exact, prefix, unl as in [policy.resource]; mg
// the method's grant): the rules its expansions match, read from its
// literal part ([Middleware.ListEntry]).
func (p *policy) template(tmpl string, mg *grant, exact map[string]*grant, prefix []prefixRule, unl *grant) (*grant, error) {
	lit, rest, expr := strings.Cut(tmpl, "{")
	if !expr || strings.ContainsAny(lit, "?#") || strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "&") || strings.HasPrefix(rest, "#") {
		// Every expansion has the canonical form of lit: match it as a URI.
		msg := message{uri: stringField(lit)}
		return p.resource(&msg, mg, exact, prefix, unl)
	}
	if len(exact) == 0 && len(prefix) == 0 || lit == "" {
		return p.unlisted(unl)
	}
	key, ok := canonicalResource(lit)
	if !ok || key != lit {
		return mg, errNonCanonicalURI
	}
	for _, r := range prefix {
		if strings.HasPrefix(key, r.prefix) {
			return r.g, nil
		}
	}
	return p.unlisted(unl)
}

// schemesOf returns the annotation of an operation needing scopes.
func schemesOf(scopes []string) []SecurityScheme {
	return []SecurityScheme{{Type: schemeOAuth2, Scopes: scopes}}
}
