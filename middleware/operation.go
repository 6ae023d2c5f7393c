package middleware

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/challenge"
)

var errNonCanonicalURI = fmt.Errorf("%w: resource URI is not in canonical form", errInvalidMessage)

// operation is the precomputed authorization of one kind of request.
type operation struct {
	scopes    []string // required: base, method, then specific; no duplicates
	key       string   // sorted scopes joined by " ", for step-up counting
	challenge string   // the operation-only 403 WWW-Authenticate value
	schemes   []byte   // its list annotation, JSON (lists.go)
}

// grant is an operation together with the labels a [Decision] reports
// for it. Every grant is built in New, so that labelling a request never
// allocates.
type grant struct {
	op           *operation
	method, name string
}

// prefixRule is one resource prefix rule, for newPrefixSet.
type prefixRule = prefixEntry[*grant]

// policy is the compiled OperationPolicy.
type policy struct {
	base      *operation
	none      *grant            // no method: requests other than POST, responses
	other     *grant            // a method neither listed nor defined by MCP
	methods   map[string]*grant // listed and MCP-defined methods
	tools     map[string]*grant
	prompts   map[string]*grant
	resExact  map[string]*grant
	resPrefix prefixSet[*grant] // prefix.go: the longest match in O(log n)
	// unlisted*: a name or URI that no entry matches, with the method's
	// operation.
	unlistedTool, unlistedPrompt, unlistedResource *grant
	denyUnlisted                                   bool
	subscribe                                      resourceRules // resources/subscribe (methods.go)
	completion                                     completionRules
}

const (
	methodToolsCall    = "tools/call"
	methodPromptsGet   = "prompts/get"
	methodResourceRead = "resources/read"
)

// compilePolicy precomputes every operation of cfg, rendering each 403
// challenge once, and the grant of every label.
func (m *Middleware) compilePolicy(cfg *Config) policy {
	op := cfg.Operations
	base := m.newOperation(cfg.Scopes)
	p := policy{
		base:         base,
		none:         &grant{op: base},
		other:        &grant{op: base, method: unlistedLabel},
		methods:      map[string]*grant{},
		tools:        map[string]*grant{},
		prompts:      map[string]*grant{},
		resExact:     map[string]*grant{},
		denyUnlisted: op.DenyUnlisted,
	}
	for name, s := range op.Methods {
		p.methods[name] = &grant{op: m.newOperation(cfg.Scopes, s), method: name}
	}
	m.applyMethodDefaults(cfg, &p) // methods.go: methods that inherit another's scopes
	named := func(method string, scopes []string, name string) *grant {
		return &grant{op: m.newOperation(cfg.Scopes, op.Methods[method], scopes), method: method, name: name}
	}
	for name, s := range op.Tools {
		p.tools[name] = named(methodToolsCall, s, name)
	}
	for name, s := range op.Prompts {
		p.prompts[name] = named(methodPromptsGet, s, name)
	}
	var prefixes []prefixRule
	for _, r := range op.Resources {
		g := named(methodResourceRead, r.Scopes, r.URI)
		if r.Prefix {
			prefixes = append(prefixes, prefixRule{r.URI, g})
		} else {
			p.resExact[r.URI] = g
		}
	}
	p.resPrefix = newPrefixSet(prefixes)
	unlisted := func(method string) *grant {
		return &grant{op: p.methods[method].op, method: method, name: unlistedLabel}
	}
	p.unlistedTool = unlisted(methodToolsCall)
	p.unlistedPrompt = unlisted(methodPromptsGet)
	p.unlistedResource = unlisted(methodResourceRead)
	p.subscribe = m.compileSubscribe(cfg, &p)
	p.completion = m.compileCompletion(cfg, &p)
	return p
}

// newOperation returns the operation needing the union of parts.
func (m *Middleware) newOperation(parts ...[]string) *operation {
	var scopes []string
	for _, part := range parts {
		scopes = appendUnique(scopes, part...)
	}
	return &operation{scopes: scopes, key: scopeKey(scopes), challenge: m.stepUpHeader(scopes), schemes: schemesOf(scopes)}
}

// scopeNeed is the operation needing scopes, whose challenge is rendered
// when a refusal needs it: the need of a route (RequireScopes), a task or
// an [Error] "insufficient_scope", which New could not precompute.
func scopeNeed(scopes []string) *operation {
	return &operation{scopes: scopes, key: scopeKey(scopes)}
}

// stepUpHeader renders the RFC 6750 §3.1 insufficient_scope challenge for
// scopes (challenge.StepUp drops offline_access).
func (m *Middleware) stepUpHeader(scopes []string) string {
	c := challenge.StepUp(m.metadataURL, scopes...)
	c.Realm = m.realm
	c.ErrorDescription = descInsufficientScope
	return c.String()
}

// lookup returns the grant of msg. A message without "method" (a
// response) needs the base scopes only. The grant is never nil, even with
// an error, so that a refusal can still be labelled.
func (p *policy) lookup(msg *message) (*grant, error) {
	if !msg.method.present {
		return p.none, nil
	}
	mg := p.methods[string(msg.method.v)]
	if mg == nil {
		// Neither listed nor defined by MCP (docs/policy.md).
		return p.unlisted(p.other)
	}
	switch {
	case string(msg.method.v) == methodToolsCall:
		return p.named(p.tools, msg.name, mg, p.unlistedTool)
	case string(msg.method.v) == methodPromptsGet:
		return p.named(p.prompts, msg.name, mg, p.unlistedPrompt)
	case string(msg.method.v) == methodResourceRead:
		return p.resource(msg, mg, p.resExact, &p.resPrefix, p.unlistedResource)
	case string(msg.method.v) == methodResourcesSubscribe:
		return p.resource(msg, mg, p.subscribe.exact, &p.subscribe.prefix, p.subscribe.unlisted)
	case string(msg.method.v) == methodCompletion:
		return p.complete(msg, mg)
	}
	return mg, nil
}

// resource looks up the resource rule of msg's params.uri among exact and
// prefix (built for one method; mg is its grant, unl its grant for a URI no
// rule matches).
func (p *policy) resource(msg *message, mg *grant, exact map[string]*grant, prefix *prefixSet[*grant], unl *grant) (*grant, error) {
	if msg.uri.notString() {
		return mg, errNotString
	}
	if !msg.uri.present {
		return p.unlisted(mg)
	}
	if len(exact) == 0 && len(prefix.keys) == 0 {
		return p.unlisted(unl)
	}
	// While rules exist only the canonical form is matched: another
	// spelling of a protected URI would miss its rule and borrow
	// weaker scopes, while a handler that normalises the URI serves
	// the protected resource.
	key, ok := canonicalResource(string(msg.uri.v))
	if !ok {
		return mg, errNonCanonicalURI
	}
	if g := exact[key]; g != nil {
		return g, nil
	}
	if g, ok := prefix.longest(key); ok {
		return g, nil
	}
	return p.unlisted(unl)
}

// named looks the name f up in gs. mg is the method's grant, unl its grant
// for a name gs does not list.
func (p *policy) named(gs map[string]*grant, f field, mg, unl *grant) (*grant, error) {
	if f.notString() {
		return mg, errNotString
	}
	if !f.present {
		return p.unlisted(mg)
	}
	if g := gs[string(f.v)]; g != nil {
		return g, nil
	}
	return p.unlisted(unl)
}

// unlisted returns g for a request naming nothing the policy lists, or
// errNotListed under DenyUnlisted.
func (p *policy) unlisted(g *grant) (*grant, error) {
	if p.denyUnlisted {
		return g, errNotListed
	}
	return g, nil
}

// canonicalResource returns the form of uri that resource rules match, or
// false if uri cannot be put in it. The canonical form is what the SDKs'
// resource handlers resolve: go-sdk's file handler and template handlers
// that parse the URI (net/url) serve the resource named by the URI without
// its query and fragment, and a fragment is never part of the resource
// (RFC 3986 §3.5). So the query and fragment ("?", "?x=1", "#", "#x") are
// cut before matching, and an exact rule applies to every such variant.
//
// uri is parsed with net/url, and refused, rather than guessed at, when it
// is not absolute, does not parse, or is another spelling of a resource
// that rules could otherwise miss: a "." or ".." segment (also
// percent-encoded), an empty path segment, a backslash (also encoded), a
// percent-encoded unreserved character or "/", upper case in the scheme
// or host (RFC 3986 §6.2.2), or any byte net/url would not reproduce as
// is (raw non-ASCII or spaces: send them percent-encoded). The body is
// forwarded byte for byte, so the handler sees exactly what was matched.
func canonicalResource(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || !strings.HasPrefix(uri, u.Scheme+":") || u.Host != strings.ToLower(u.Host) {
		return "", false
	}
	path := u.EscapedPath()
	if u.Opaque != "" {
		path = u.Opaque
	}
	if hasDotSegment([]byte(path)) || strings.Contains(u.Path, "//") || strings.ContainsRune(u.Path, '\\') ||
		strings.ContainsRune(path, '\\') || !canonicalEscapes(path) {
		return "", false
	}
	v := *u
	v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = "", false, "", ""
	key := v.String()
	rest, ok := strings.CutPrefix(uri, key)
	if !ok || rest != "" && rest[0] != '?' && rest[0] != '#' {
		return "", false // net/url respelled it
	}
	return key, true
}

// canonicalURI reports whether uri can be matched against resource rules
// ([canonicalResource]).
func canonicalURI(uri []byte) bool {
	_, ok := canonicalResource(string(uri))
	return ok
}

// canonicalEscapes reports whether the escaped path p percent-encodes only
// what must be: no unreserved character, "/" or "\\".
func canonicalEscapes(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			continue
		}
		if i+2 >= len(p) || !isHexDigit(p[i+1]) || !isHexDigit(p[i+2]) {
			return false
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) || c == '/' || c == '\\' {
			return false
		}
		i += 2
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// isUnreserved reports RFC 3986 §2.3 unreserved characters, whose
// percent-encoding is never canonical.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// hasDotSegment reports whether uri has a "." or ".." segment, with dots
// possibly percent-encoded, between any of the separators / \ ? #.
func hasDotSegment(uri []byte) bool {
	dots, other := 0, false
	for i := 0; i <= len(uri); i++ {
		if i == len(uri) || uri[i] == '/' || uri[i] == '\\' || uri[i] == '?' || uri[i] == '#' {
			if !other && (dots == 1 || dots == 2) {
				return true
			}
			dots, other = 0, false
			continue
		}
		switch {
		case uri[i] == '.':
			dots++
		case uri[i] == '%' && i+2 < len(uri) && uri[i+1] == '2' && (uri[i+2] == 'e' || uri[i+2] == 'E'):
			dots++
			i += 2
		default:
			other = true
		}
	}
	return false
}

// compileImplies returns the transitive closure of ScopeImplies: for each
// scope, every scope it implies directly or indirectly.
func compileImplies(im map[string][]string) map[string]map[string]struct{} {
	if len(im) == 0 {
		return nil
	}
	out := make(map[string]map[string]struct{}, len(im))
	for k := range im {
		set := map[string]struct{}{}
		stack := slices.Clone(im[k])
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if _, done := set[s]; done {
				continue
			}
			set[s] = struct{}{}
			stack = append(stack, im[s]...)
		}
		out[k] = set
	}
	return out
}

// satisfied reports whether granted holds want or a scope implying it.
func (m *Middleware) satisfied(granted []string, want string) bool {
	if slices.Contains(granted, want) {
		return true
	}
	for _, g := range granted {
		if _, ok := m.implies[g][want]; ok {
			return true
		}
	}
	return false
}

// missing returns the scopes of required that granted does not satisfy, or
// nil. It does not allocate when nothing is missing.
func (m *Middleware) missing(granted, required []string) []string {
	var out []string
	for _, r := range required {
		if !m.satisfied(granted, r) {
			out = append(out, r)
		}
	}
	return out
}

func appendUnique(dst []string, src ...string) []string {
	if len(dst)+len(src) > 16 {
		// Long lists (a token may carry thousands of scopes): stay linear.
		seen := make(map[string]struct{}, len(dst)+len(src))
		for _, s := range dst {
			seen[s] = struct{}{}
		}
		for _, s := range src {
			if _, dup := seen[s]; !dup {
				seen[s] = struct{}{}
				dst = append(dst, s)
			}
		}
		return dst
	}
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// scopeKey is the canonical form of a scope set: sorted, space-joined.
func scopeKey(scopes []string) string {
	s := slices.Clone(scopes)
	slices.Sort(s)
	return strings.Join(s, " ")
}
