package middleware

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/challenge"
)

var errDotSegment = fmt.Errorf("%w: resource URI has a dot segment", ErrInvalidMessage)

// operation is the precomputed authorization of one kind of request.
type operation struct {
	scopes    []string // required: base, method, then specific; no duplicates
	key       string   // sorted scopes joined by " ", for step-up counting
	challenge string   // the operation-only 403 WWW-Authenticate value
}

type prefixRule struct {
	prefix []byte
	op     *operation
}

// policy is the compiled OperationPolicy.
type policy struct {
	base         *operation
	methods      map[string]*operation
	tools        map[string]*operation
	prompts      map[string]*operation
	resExact     map[string]*operation
	resPrefix    []prefixRule // longest first
	denyUnlisted bool
}

const (
	methodToolsCall    = "tools/call"
	methodPromptsGet   = "prompts/get"
	methodResourceRead = "resources/read"
)

// compilePolicy precomputes every operation of cfg, rendering each 403
// challenge once.
func (m *Middleware) compilePolicy(cfg *Config) policy {
	op := cfg.Operations
	p := policy{
		base:         m.newOperation(cfg.Scopes),
		methods:      map[string]*operation{},
		tools:        map[string]*operation{},
		prompts:      map[string]*operation{},
		resExact:     map[string]*operation{},
		denyUnlisted: op.DenyUnlisted,
	}
	for name, s := range op.Methods {
		p.methods[name] = m.newOperation(cfg.Scopes, s)
	}
	for name, s := range op.Tools {
		p.tools[name] = m.newOperation(cfg.Scopes, op.Methods[methodToolsCall], s)
	}
	for name, s := range op.Prompts {
		p.prompts[name] = m.newOperation(cfg.Scopes, op.Methods[methodPromptsGet], s)
	}
	for _, r := range op.Resources {
		o := m.newOperation(cfg.Scopes, op.Methods[methodResourceRead], r.Scopes)
		if r.Prefix {
			p.resPrefix = append(p.resPrefix, prefixRule{[]byte(r.URI), o})
		} else {
			p.resExact[r.URI] = o
		}
	}
	slices.SortStableFunc(p.resPrefix, func(a, b prefixRule) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	return p
}

// newOperation returns the operation needing the union of parts.
func (m *Middleware) newOperation(parts ...[]string) *operation {
	var scopes []string
	for _, part := range parts {
		scopes = appendUnique(scopes, part...)
	}
	return &operation{scopes: scopes, key: scopeKey(scopes), challenge: m.stepUpHeader(scopes)}
}

// stepUpHeader renders the RFC 6750 §3.1 insufficient_scope challenge for
// scopes (challenge.StepUp drops offline_access).
func (m *Middleware) stepUpHeader(scopes []string) string {
	c := challenge.StepUp(m.metadataURL, scopes...)
	c.Realm = m.realm
	c.ErrorDescription = descInsufficientScope
	return c.String()
}

// lookup returns the operation of msg. A message without "method" (a
// response) needs the base scopes only.
func (p *policy) lookup(msg *message) (*operation, error) {
	if !msg.hasMethod {
		return p.base, nil
	}
	mop := p.methods[string(msg.method)]
	if mop == nil {
		mop = p.base
	}
	switch {
	case string(msg.method) == methodToolsCall:
		return p.named(p.tools, msg.hasName, msg.nameNotString, msg.name, mop)
	case string(msg.method) == methodPromptsGet:
		return p.named(p.prompts, msg.hasName, msg.nameNotString, msg.name, mop)
	case string(msg.method) == methodResourceRead:
		if msg.uriNotString {
			return nil, errNotString
		}
		if msg.hasURI {
			if o := p.resExact[string(msg.uri)]; o != nil {
				return o, nil
			}
			if len(p.resPrefix) > 0 {
				if hasDotSegment(msg.uri) {
					return nil, errDotSegment
				}
				for _, r := range p.resPrefix {
					if bytes.HasPrefix(msg.uri, r.prefix) {
						return r.op, nil
					}
				}
			}
		}
		return p.unlisted(mop)
	}
	return mop, nil
}

func (p *policy) named(ops map[string]*operation, has, notString bool, name []byte, mop *operation) (*operation, error) {
	if notString {
		return nil, errNotString
	}
	if has {
		if o := ops[string(name)]; o != nil {
			return o, nil
		}
	}
	return p.unlisted(mop)
}

func (p *policy) unlisted(mop *operation) (*operation, error) {
	if p.denyUnlisted {
		return nil, ErrNotListed
	}
	return mop, nil
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
