package middleware

import (
	"encoding/json"
	"fmt"
	"strings"

	rpcanswer "github.com/mcpguard/mcpguard/internal/answer"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// ListMode chooses what the entries of list answers (tools/list,
// prompts/list, resources/list, resources/templates/list) show:
// Config.Lists. The middleware applies it to every list answer, JSON or
// SSE, whatever the server behind it (answers.go). Whatever the mode, an
// entry that no token could ever reach is never listed (docs/policy.md,
// "Lists").
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

// securityScheme is one element of a securitySchemes array (SEP-1488):
// {"type":"oauth2","scopes":[…]} for an operation that needs a token,
// {"type":"noauth"} for a public one.
type securityScheme struct {
	Type   string   `json:"type"`
	Scopes []string `json:"scopes,omitempty"`
}

// securityScheme types.
const (
	schemeOAuth2 = "oauth2"
	schemeNoAuth = "noauth"
)

// listVerdict is listEntry's decision about one list entry for one
// principal.
type listVerdict struct {
	// listed reports whether the entry is shown.
	listed bool
	// schemes is the JSON of the entry's annotation, shared: nil under
	// ListOff and when the entry is not listed; [{"type":"noauth"}] for a
	// public operation, else [{"type":"oauth2","scopes":[…]}] with every
	// scope the operation needs (base, method and the entry's own, as the
	// 403 of a call without them would name).
	schemes []byte
	// rule names the [Rule] why the entry is not listed, if one is: a
	// rule by which no call of the principal could pass, or a
	// require-scopes rule adding the scopes its token lacks.
	rule string
}

// The entry lists (lists.go) the answer layer filters.
const (
	methodToolsList     = "tools/list"
	methodPromptsList   = "prompts/list"
	methodResourcesList = "resources/list"
	methodTemplatesList = "resources/templates/list"
)

// listKind is one entry list: its method, the result member holding its
// entries, and the entry member naming each.
type listKind struct {
	method, member, key string
	// read lists the result members the filter reads (case variants of
	// them are refused).
	read []string
}

var listKinds = [...]listKind{
	{method: methodToolsList, member: "tools", key: "name", read: []string{"tools", memberCacheScope}},
	{method: methodPromptsList, member: "prompts", key: "name", read: []string{"prompts", memberCacheScope}},
	{method: methodResourcesList, member: "resources", key: "uri", read: []string{"resources", memberCacheScope}},
	{method: methodTemplatesList, member: "resourceTemplates", key: "uriTemplate", read: []string{"resourceTemplates", memberCacheScope}},
}

// listKindOf returns the entry list of method, or nil.
func listKindOf(method []byte) *listKind {
	for i := range listKinds {
		if string(method) == listKinds[i].method {
			return &listKinds[i]
		}
	}
	return nil
}

// listEntry decides, for principal p (nil or anonymous: no token), how the
// list method list shows the entry name: a tool name ("tools/list"), a
// prompt name ("prompts/list"), a resource URI ("resources/list") or a
// URI template ("resources/templates/list"). It is the one reading of the
// operation policy for lists, applied by the answer layer to every list
// answer (filterEntries), in the mode of Config.Lists:
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
// prefix rule the literal part falls under, or no rule. listEntry never
// replaces the check at call time.
func (m *Middleware) listEntry(p *Principal, list, name string) listVerdict {
	g, public, ok := m.entryGrant(list, name)
	if !ok {
		return listVerdict{}
	}
	schemes := noAuthSchemes
	if !public {
		op := g.op
		var require string
		if m.rules != nil {
			var deny string
			if op, deny, require = m.listRules(p, list, name, op); deny != "" {
				return listVerdict{rule: deny} // no call of p could pass (rules.go)
			}
		}
		schemes = op.schemes
		permitted := p != nil && !p.Anonymous && m.missing(p.Scopes, op.scopes) == nil
		if !permitted && (m.cfg.Lists == ListHide || !m.obtainable(op)) {
			if require != "" && p != nil && !p.Anonymous && m.missing(p.Scopes, g.op.scopes) == nil {
				return listVerdict{rule: require} // the scopes a rule adds are what p lacks
			}
			return listVerdict{}
		}
	}
	if m.cfg.Lists == ListOff {
		schemes = nil
	}
	return listVerdict{listed: true, schemes: schemes}
}

var noAuthSchemes = schemesJSON(securityScheme{Type: schemeNoAuth})

// entryGrant returns the grant of a call of the entry name of list, and
// whether it is public; false when no token could reach it.
func (m *Middleware) entryGrant(list, name string) (g *grant, public, ok bool) {
	if list == methodTemplatesList {
		g, err := m.policy.template(name, m.policy.methods[methodResourceRead], m.policy.resExact, &m.policy.resPrefix, m.policy.unlistedResource)
		return g, false, err == nil
	}
	msg, ok := callOf(list, name)
	if !ok {
		return nil, false, false
	}
	if m.public.lookup(&msg) != nil {
		return nil, true, true
	}
	g, err := m.policy.lookup(&msg)
	return g, false, err == nil
}

// callOf returns the message of a call of the entry name of list
// (tools/call, prompts/get or resources/read); false for a list whose
// entries name no one call (templates, tasks).
func callOf(list, name string) (msg message, ok bool) {
	switch list {
	case methodToolsList:
		msg.method, msg.name = stringField(methodToolsCall), stringField(name)
	case methodPromptsList:
		msg.method, msg.name = stringField(methodPromptsGet), stringField(name)
	case methodResourcesList:
		msg.method, msg.uri = stringField(methodResourceRead), stringField(name)
	default:
		return msg, false
	}
	return msg, true
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
// literal part (listEntry).
func (p *policy) template(tmpl string, mg *grant, exact map[string]*grant, prefix *prefixSet[*grant], unl *grant) (*grant, error) {
	lit, rest, expr := strings.Cut(tmpl, "{")
	if !expr || strings.ContainsAny(lit, "?#") || strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "&") || strings.HasPrefix(rest, "#") {
		// Every expansion has the canonical form of lit: match it as a URI.
		msg := message{uri: stringField(lit)}
		return p.resource(&msg, mg, exact, prefix, unl)
	}
	if len(exact) == 0 && len(prefix.keys) == 0 || lit == "" {
		return p.unlisted(unl)
	}
	key, ok := canonicalResource(lit)
	if !ok || key != lit {
		return mg, errNonCanonicalURI
	}
	if g, ok := prefix.longest(key); ok {
		return g, nil
	}
	return p.unlisted(unl)
}

// schemesOf returns the annotation of an operation needing scopes.
func schemesOf(scopes []string) []byte {
	return schemesJSON(securityScheme{Type: schemeOAuth2, Scopes: scopes})
}

// schemesJSON returns the JSON array of s.
func schemesJSON(s securityScheme) []byte {
	b, err := json.Marshal([]securityScheme{s})
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return b
}

// Members of list answers the filter reads and writes.
const (
	memberMeta       = "_meta"
	memberSchemes    = "securitySchemes"
	memberCacheScope = "cacheScope"
)

// entryRead lists the entry members the filter reads, by entry key.
var entryRead = map[string][]string{
	"name":        {"name", memberSchemes, memberMeta},
	"uri":         {"uri", memberSchemes, memberMeta},
	"uriTemplate": {"uriTemplate", memberSchemes, memberMeta},
}

// filterEntries returns result, the result of the answer's entry list
// (t.entries), with each entry shown as listEntry decides for t's
// principal: left out, or kept and, unless Config.Lists is ListOff,
// annotated with the scopes its call needs (SEP-1488):
// _meta.securitySchemes, and for a tool also its top-level
// securitySchemes; the server's own annotation is replaced, its other
// _meta members kept. An entry that is not an object or has no string
// name (URI, template) cannot be decided and is left out. The result is
// marked cacheScope "private" in every mode (it depends on the token: even
// under ListOff, an entry needing a scope no authorization server
// advertises is listed only to a token holding it), replacing the server's
// own cacheScope (the go-sdk says "public"). A result
// without its entries member is returned as it is; one whose entries are
// not an array (or null) is refused.
func (t *answerWriter) filterEntries(result []byte) ([]byte, error) {
	k := t.entries
	read := entryRead[k.key]
	// One pass of the tokenizer over the result: its members, the entries
	// array, and the members of each entry the filter reads.
	as, ae, cs, ce := -1, -1, -1, -1
	isArray := false
	var entries []listEntrySpan
	err := t.m.json.Walk(result, k.read, func(v *strictjson.Value, name []byte) error {
		switch string(name) {
		case k.member:
			if v.Kind() != '[' {
				_, err := v.Raw()
				as, ae = v.Offsets()
				return err
			}
			isArray = true
			err := v.Elements(func(e *strictjson.Value) error {
				es := listEntrySpan{ms: -1, ss: -1}
				var err error
				if e.Kind() == '{' {
					err = e.Members(read, func(mv *strictjson.Value, n []byte) error {
						var err error
						switch string(n) {
						case k.key:
							es.name, err = mv.Raw()
						case memberMeta:
							_, err = mv.Raw()
							es.ms, es.me = mv.Offsets()
						case memberSchemes:
							_, err = mv.Raw()
							es.ss, es.se = mv.Offsets()
						}
						return err
					})
					es.object = true
				} else {
					_, err = e.Raw()
				}
				es.s, es.e = e.Offsets()
				entries = append(entries, es)
				return err
			})
			as, ae = v.Offsets()
			return err
		case memberCacheScope:
			_, err := v.Raw()
			cs, ce = v.Offsets()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if as < 0 {
		return result, nil
	}
	if !isArray && string(result[as:ae]) != "null" {
		return nil, rpcanswer.ErrInvalid
	}
	out := make([]byte, 0, len(result)+len(entries)*48+32)
	out = append(out, '{')
	if cs < 0 {
		out = append(out, `"`+memberCacheScope+`":"private",`...)
	}
	// The members before the entries, the entries, the members after,
	// with cacheScope replaced where it is.
	pos := 1
	emit := func(s, e int, fn func([]byte) ([]byte, error)) error {
		out = append(out, result[pos:s]...)
		var err error
		out, err = fn(out)
		pos = e
		return err
	}
	var hide []bool
	if t.m.pins != nil && k.method == methodToolsList {
		elems := make([][]byte, len(entries))
		for i, es := range entries {
			elems[i] = result[es.s:es.e:es.e]
		}
		if hide, err = t.checkPins(elems); err != nil {
			return nil, err
		}
	}
	// The entries left out, for the decision event (reportHidden), when
	// anyone asks for it.
	var hidden *hiddenEntries
	if t.m.onDecision != nil || t.ctx.Value(decisionKey{}) != nil {
		hidden = &hiddenEntries{}
	}
	list := func(out []byte) ([]byte, error) {
		out = append(out, '[')
		n := 0
		for i := range entries {
			if hide != nil && hide[i] {
				hidden.add(entries[i].name, "") // its definition is not its pin (pins.go)
				continue
			}
			start := len(out)
			if n > 0 {
				out = append(out, ',')
			}
			kept, o, err := t.appendEntry(out, result, &entries[i], hidden)
			if err != nil {
				return nil, err
			}
			if !kept {
				out = out[:start]
				continue
			}
			out = o
			n++
		}
		return append(out, ']'), nil
	}
	private := func(out []byte) ([]byte, error) { return append(out, `"private"`...), nil }
	if cs >= 0 && cs < as {
		err = emit(cs, ce, private)
	}
	if err == nil {
		err = emit(as, ae, list)
	}
	if err == nil && cs > as {
		err = emit(cs, ce, private)
	}
	if err != nil {
		return nil, err
	}
	t.reportHidden(hidden)
	return append(out, result[pos:]...), nil
}

// hiddenEntries are the names (URIs, templates) of the entries a list
// answer left out, in answer order, and the smallest name of the rules
// by which some were (nil: nobody asks for them).
type hiddenEntries struct {
	names []string
	rule  string
}

// add notes the entry with the raw name left out (by rule, when a
// [Rule] is why). An entry without a string name names nothing.
func (h *hiddenEntries) add(raw []byte, rule string) {
	if h == nil {
		return
	}
	if name, ok := rpcanswer.String(raw); ok {
		h.names = append(h.names, name)
	}
	if rule != "" && (h.rule == "" || rule < h.rule) {
		h.rule = rule
	}
}

// reportHidden delivers the decision event of a list answer that left
// entries out (docs/operations.md, "Decision events"): one event per
// answer, reason "list_filtered", Status 0 (the answer passes), with the
// list request's labels, its principal and session, Hidden the names left
// out and Rule the smallest name of the rules by which some were. An
// answer that leaves nothing out is no event of its own: the list
// request's "authorized" event is its decision.
func (t *answerWriter) reportHidden(h *hiddenEntries) {
	if h == nil || len(h.names) == 0 {
		return
	}
	rec, _ := t.ctx.Value(decisionKey{}).(*Decision)
	var g *grant
	if t.p != nil {
		g = t.p.grant
	}
	d := decision(t.hdr, reasonListFiltered, t.p, g)
	d.ID = echoable(t.reqID)
	d.Rule = h.rule
	d.Hidden = h.names
	t.m.deliver(t.ctx, rec, d)
}

// listEntrySpan is one element of a list answer's entries as
// filterEntries read it: offsets in the result (-1: absent).
type listEntrySpan struct {
	s, e   int    // the element
	object bool   // it is an object
	name   []byte // its name (URI, template) member, raw; nil if absent
	ms, me int    // its _meta member's value
	ss, se int    // its securitySchemes member's value
}

// appendEntry appends es, one entry of t's list in result, to out as
// listEntry shows it, or reports false when it is left out (noted in
// hidden when listEntry left it out).
func (t *answerWriter) appendEntry(out, result []byte, es *listEntrySpan, hidden *hiddenEntries) (bool, []byte, error) {
	if !es.object {
		return false, out, nil
	}
	k := t.entries
	str, ok := rpcanswer.String(es.name)
	if !ok {
		return false, out, nil
	}
	v := t.m.listEntry(t.p, k.method, str)
	if !v.listed {
		hidden.add(es.name, v.rule)
		return false, out, nil
	}
	elem := result[es.s:es.e]
	js := v.schemes
	if js == nil {
		return true, append(out, elem...), nil
	}
	// Offsets within elem.
	ms, me, ss, se := es.ms, es.me, es.ss, es.se
	if ms >= 0 {
		ms, me = ms-es.s, me-es.s
	}
	if ss >= 0 {
		ss, se = ss-es.s, se-es.s
	}
	tool := k.method == methodToolsList
	out = append(out, '{')
	if tool && ss < 0 {
		out = append(append(append(out, `"`+memberSchemes+`":`...), js...), ',')
	}
	if ms < 0 {
		out = append(append(append(out, `"`+memberMeta+`":{"`+memberSchemes+`":`...), js...), "},"...)
	}
	pos := 1
	if tool && ss >= 0 && ss < ms {
		out = append(append(out, elem[pos:ss]...), js...)
		pos = se
	}
	if ms >= 0 {
		out = append(out, elem[pos:ms]...)
		var err error
		if out, err = t.appendMeta(out, elem[ms:me], js); err != nil {
			return false, nil, err
		}
		pos = me
	}
	if tool && ss >= 0 && ss > ms {
		out = append(append(out, elem[pos:ss]...), js...)
		pos = se
	}
	return true, append(out, elem[pos:]...), nil
}

// appendMeta appends an entry's _meta value meta with securitySchemes set
// to js (a _meta that is not an object is replaced).
func (t *answerWriter) appendMeta(out, meta, js []byte) ([]byte, error) {
	if meta[0] != '{' {
		return append(append(append(out, `{"`+memberSchemes+`":`...), js...), '}'), nil
	}
	ss, se, n := -1, -1, 0
	err := t.m.json.MemberSpans(meta, []string{memberSchemes}, func(name []byte, s, e int) error {
		n++
		if string(name) == memberSchemes {
			ss, se = s, e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ss >= 0 {
		out = append(append(out, meta[:ss]...), js...)
		return append(out, meta[se:]...), nil
	}
	out = append(append(out, `{"`+memberSchemes+`":`...), js...)
	if n == 0 {
		return append(out, '}'), nil
	}
	return append(append(out, ','), meta[1:]...), nil
}
