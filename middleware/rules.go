package middleware

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	celref "github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Rule is one policy rule beyond scopes (docs/policy.md, "Rules"): a
// condition in CEL over the caller, the verified token's claims and the
// MCP request, decided after the token and the scopes of the operation,
// before the request reaches the server. A rule has exactly one outcome:
//
//   - deny (DenyWhen): when the condition holds, the request is refused
//     with the final 403 {"error":"access_denied"} whose challenge invites
//     no new authorization (Decision reason "rule_denied"). A client must
//     not retry it as a step-up.
//   - require scopes (RequireScopes, optionally When): when When holds (or
//     is empty), the request also needs RequireScopes: a token lacking one
//     gets the 403 insufficient_scope step-up of the operation's scopes
//     and these, counted by the same step-up bound (Config.StepUpLimit) as
//     every other.
//
// Deny overrides; the order of rules never changes a decision. A
// condition that fails at request time (a missing key, a type mismatch,
// the cost limit) denies, and the failure is logged with the rule's name.
type Rule struct {
	// Name identifies the rule in errors, logs and decisions. Required,
	// unique, visible ASCII.
	Name string
	// Methods, Tools, Prompts and Resources select the requests the rule
	// judges; a request is judged if any selector matches it, and a rule
	// with no selector judges every request with a method. Methods are
	// JSON-RPC methods, compared byte for byte. Tools and Prompts are
	// patterns of tools/call and prompts/get names where "*" matches any
	// run of characters ("*" alone: every name). Resources are URI
	// prefixes of resources/read and resources/subscribe, compared with
	// the canonical URI ([ResourceRule].URI).
	Methods, Tools, Prompts, Resources []string
	// DenyWhen is the condition of a deny rule: a CEL expression of type
	// bool over user, claims and mcp.
	DenyWhen string
	// RequireScopes are the scopes a require-scopes rule adds to the
	// operation's when When holds.
	RequireScopes []string
	// When is the condition of a require-scopes rule; empty means always.
	When string
}

// tenantArgumentRule is the name of the rule [Config].TenantArgument
// builds.
const tenantArgumentRule = "tenant_argument"

var (
	// errRuleDenied: a [Rule] denied the request (Decision reason
	// "rule_denied"; the final 403 access_denied).
	errRuleDenied = errors.New("middleware: denied by rule")
	// errRuleFailed: a rule's condition failed at request time; the
	// request is denied (fail closed). It wraps errRuleDenied.
	errRuleFailed = fmt.Errorf("%w: condition failed", errRuleDenied)
)

// ruleError names the rule of a refusal: the log line and the Decision
// carry it.
type ruleError struct {
	rule string
	err  error // errRuleDenied, errRuleFailed (wrapping the CEL error), or an insufficient_scope Error
}

func (e *ruleError) Error() string { return e.err.Error() + ": rule " + strconv.Quote(e.rule) }
func (e *ruleError) Unwrap() error { return e.err }

// compiledRule is a Rule checked and planned in New.
type compiledRule struct {
	name   string
	deny   bool
	scopes []string
	prg    cel.Program // nil: a require-scopes rule without When
	// What the condition reads: mcp.args needs the arguments decoded,
	// claims the claims set.
	args bool
	// loops: the condition has a comprehension, the only part of an
	// evaluation that checks the request's context.
	loops bool
}

// namePattern is one Tools or Prompts pattern and the rules it selects.
type namePattern struct {
	pattern string
	rules   []*compiledRule
}

// names are the Tools or Prompts selectors of the rules: exact names in
// a map, patterns with "*" in a list, each pattern once (rules sharing a
// pattern, as "*" or "get_*" often is, cost one match).
type names struct {
	exact    map[string][]*compiledRule
	patterns []namePattern
	index    map[string]int // pattern to its place in patterns
}

func (n *names) add(pattern string, c *compiledRule) {
	if !strings.Contains(pattern, "*") {
		if n.exact == nil {
			n.exact = map[string][]*compiledRule{}
		}
		n.exact[pattern] = append(n.exact[pattern], c)
		return
	}
	if i, ok := n.index[pattern]; ok {
		n.patterns[i].rules = append(n.patterns[i].rules, c)
		return
	}
	if n.index == nil {
		n.index = map[string]int{}
	}
	n.index[pattern] = len(n.patterns)
	n.patterns = append(n.patterns, namePattern{pattern, []*compiledRule{c}})
}

// each calls fn with every rule whose selector matches name.
func (n *names) each(name string, fn func(*compiledRule)) {
	for _, c := range n.exact[name] {
		fn(c)
	}
	for _, np := range n.patterns {
		if matchName(np.pattern, name) {
			for _, c := range np.rules {
				fn(c)
			}
		}
	}
}

// ruleSet is the compiled Config.Rules: the rules by what selects them,
// so that a request evaluates only its own.
type ruleSet struct {
	every    []*compiledRule // no selector
	methods  map[string][]*compiledRule
	tools    names
	prompts  names
	res      prefixSet[*compiledRule]
	hasRes   bool
	argNames []string // names the conditions use: case variants in arguments are refused
	anyArgs  bool
	user     *recordType // the types of user and mcp, which build a request's values
	mcp      *recordType
	// vals are CEL strings made once (intern): the methods, tool and
	// prompt names of the policy and the issuers, which a request's
	// mcp.method, mcp.name and user.issuer take without converting or
	// allocating.
	vals map[string]celref.Val
}

// intern makes the CEL string of every name, once.
func (rs *ruleSet) intern(names ...iter.Seq[string]) {
	if rs.vals == nil {
		rs.vals = map[string]celref.Val{}
	}
	for _, seq := range names {
		for n := range seq {
			rs.vals[n] = types.String(n)
		}
	}
}

// str returns the CEL string of b (interned, or made).
func (rs *ruleSet) str(b []byte) celref.Val {
	if v, ok := rs.vals[string(b)]; ok {
		return v
	}
	return types.String(string(b))
}

// compileRules checks and plans rules (and the TenantArgument shorthand)
// once. Every error names the rule and, for a condition, the position.
func compileRules(rules []Rule, tenantArg string) (*ruleSet, error) {
	if tenantArg != "" {
		if !validArgName(tenantArg) {
			return nil, fmt.Errorf("%w: TenantArgument must be letters, digits, '_', '-' or '.'", errConfig)
		}
		rules = append(slices.Clone(rules), Rule{
			Name:  tenantArgumentRule,
			Tools: []string{"*"}, Prompts: []string{"*"},
			DenyWhen: "'" + tenantArg + "' in mcp.args && (user.tenant == '' || mcp.args['" + tenantArg + "'] != user.tenant)",
		})
	}
	if len(rules) == 0 {
		return nil, nil
	}
	env, user, mcp, err := newRuleEnv()
	if err != nil {
		return nil, fmt.Errorf("%w: rules environment: %w", errConfig, err)
	}
	rs := &ruleSet{methods: map[string][]*compiledRule{}, user: user, mcp: mcp}
	seen := map[string]bool{}
	names := map[string]bool{}
	var prefixes []prefixEntry[*compiledRule]
	for i, r := range rules {
		at := fmt.Sprintf("Rules[%d]", i)
		if r.Name != "" {
			at = fmt.Sprintf("Rules[%q]", r.Name)
		}
		switch {
		case r.Name == "" || !isVisible(r.Name):
			return nil, fmt.Errorf("%w: %s: a rule needs a name of visible ASCII", errConfig, at)
		case seen[r.Name]:
			return nil, fmt.Errorf("%w: %s: repeated rule name", errConfig, at)
		case (r.DenyWhen != "") == (len(r.RequireScopes) > 0):
			return nil, fmt.Errorf("%w: %s: a rule has exactly one outcome: DenyWhen or RequireScopes", errConfig, at)
		case r.DenyWhen != "" && r.When != "":
			return nil, fmt.Errorf("%w: %s: When goes with RequireScopes; a deny rule's condition is DenyWhen", errConfig, at)
		}
		seen[r.Name] = true
		if err := checkScopes(at+".RequireScopes", r.RequireScopes); err != nil {
			return nil, err
		}
		c := &compiledRule{name: r.Name, deny: r.DenyWhen != "", scopes: appendUnique(nil, r.RequireScopes...)}
		if expr := r.DenyWhen + r.When; expr != "" {
			if c.prg, c.args, c.loops, err = compileCondition(env, expr, names, user, mcp); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", errConfig, at, err)
			}
			rs.anyArgs = rs.anyArgs || c.args
		}
		for _, s := range [][]string{r.Methods, r.Tools, r.Prompts, r.Resources} {
			if slices.Contains(s, "") {
				return nil, fmt.Errorf("%w: %s: empty selector", errConfig, at)
			}
		}
		if len(r.Methods)+len(r.Tools)+len(r.Prompts)+len(r.Resources) == 0 {
			rs.every = append(rs.every, c)
		}
		for _, m := range r.Methods {
			rs.methods[m] = append(rs.methods[m], c)
		}
		for _, t := range r.Tools {
			rs.tools.add(t, c)
		}
		for _, p := range r.Prompts {
			rs.prompts.add(p, c)
		}
		for _, u := range r.Resources {
			if strings.ContainsAny(u, "?#") {
				return nil, fmt.Errorf("%w: %s: a resource prefix has a query or fragment, which matching ignores", errConfig, at)
			}
			prefixes = append(prefixes, prefixEntry[*compiledRule]{u, c})
		}
	}
	rs.res = newPrefixSet(prefixes)
	rs.hasRes = len(prefixes) > 0
	rs.argNames = slices.Sorted(maps.Keys(names))
	return rs, nil
}

// compileCondition compiles expr, which must be of type bool and within
// the cost bound, and plans it (a comprehension stops when the request's
// context ends). It reports whether expr reads mcp.args and whether it
// has a comprehension (loops), and adds to names every field name and
// string constant it uses (for the case-variant check of arguments).
func compileCondition(env *cel.Env, expr string, names map[string]bool, user, mcp *recordType) (prg cel.Program, args, loops bool, err error) {
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, false, false, fmt.Errorf("condition: %s", iss.Err().Error())
	}
	if !checked.OutputType().IsExactType(types.BoolType) {
		return nil, false, false, fmt.Errorf("condition has type %s, want bool", checked.OutputType())
	}
	est, err := env.EstimateCost(checked, sizeEstimator{})
	if err != nil {
		return nil, false, false, fmt.Errorf("condition cost: %w", err)
	}
	if est.Max > maxRuleCost {
		return nil, false, false, fmt.Errorf("condition may cost %d, over the bound %d", est.Max, maxRuleCost)
	}
	prg, err = env.Program(checked, ruleProgramOptions(user, mcp)...)
	if err != nil {
		return nil, false, false, fmt.Errorf("condition: %w", err)
	}
	// The condition reads the arguments unless every use of mcp selects
	// another field of it.
	mcpUses, otherFields := 0, 0
	ast.PostOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.ComprehensionKind:
			loops = true
		case ast.SelectKind:
			s := e.AsSelect()
			names[s.FieldName()] = true
			if s.FieldName() != "args" && s.Operand().Kind() == ast.IdentKind && s.Operand().AsIdent() == "mcp" {
				otherFields++
			}
		case ast.LiteralKind:
			if s, ok := e.AsLiteral().(types.String); ok {
				names[string(s)] = true
			}
		case ast.IdentKind:
			if e.AsIdent() == "mcp" {
				mcpUses++
			}
		}
	}))
	return prg, mcpUses > otherFields, loops, nil
}

// validArgName reports whether s is a name TenantArgument accepts.
func validArgName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}

// matchName reports whether name matches pattern, in which "*" matches
// any run of bytes.
func matchName(pattern, name string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == name
	}
	if !strings.HasPrefix(name, pattern[:star]) {
		return false
	}
	name, pattern = name[star:], pattern[star+1:]
	for {
		star = strings.IndexByte(pattern, '*')
		if star < 0 {
			return strings.HasSuffix(name, pattern)
		}
		i := strings.Index(name, pattern[:star])
		if i < 0 {
			return false
		}
		name, pattern = name[i+star:], pattern[star+1:]
	}
}

// verdict is what the rules decided about one request.
type verdict struct {
	deny   *compiledRule // the denying rule with the smallest name, nil if none
	err    error         // its cause: errRuleDenied or errRuleFailed wrapping the evaluation error
	scopes []string      // the scopes the matching require-scopes rules add
	rule   *compiledRule // the require-scopes rule with the smallest name among those adding scopes
}

// ruleRequest is one request as the rules see it (the CEL activation):
// built once, read by every rule.
type ruleRequest struct {
	rs                *ruleSet
	p                 *Principal
	method, name, uri []byte // the message's, valid during the request (mcp.* reads them)
	revision          string
	args              celref.Val // mcp.args; nil: {}
	user, mcp         record
	claims            map[string]any
	claimErr          error
	claimed           bool
	argsErr           error // arguments that are not an object, or hold a case variant of a name the rules use
}

// ResolveName implements interpreter.Activation.
func (a *ruleRequest) ResolveName(name string) (any, bool) {
	switch name {
	case "user":
		return &a.user, true
	case "mcp":
		return &a.mcp, true
	case "claims":
		if !a.claimed {
			a.claimed = true
			switch {
			case a.p.Claims == nil:
				a.claimErr = errNilClaims
			default:
				a.claimErr = a.p.Claims.Decode(&a.claims)
				if a.claimErr == nil && tooLarge(a.claims, 0) {
					a.claimErr = errRuleInput
				}
			}
		}
		if a.claimErr != nil {
			return types.NewErr("claims unavailable"), true
		}
		return a.claims, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (*ruleRequest) Parent() interpreter.Activation { return nil }

var _ interpreter.Activation = (*ruleRequest)(nil)

// judge evaluates the rules that select msg (authorized for p with the
// operation of g) and returns the verdict. It never allocates when no
// rule selects msg.
func (rs *ruleSet) judge(ctx context.Context, p *Principal, msg *message, revision string) verdict {
	return rs.judgeAt(ctx, p, msg, revision, false)
}

// judgeAt is judge; at list time (listTime), when the arguments are not
// known, a rule whose condition reads them decides nothing: the entry's
// outcome depends on the call.
func (rs *ruleSet) judgeAt(ctx context.Context, p *Principal, msg *message, revision string, listTime bool) verdict {
	var v verdict
	var req *ruleRequest
	// One execution frame serves every condition of the request; it gets
	// the request's context (which cel-go copies into a cancelable one)
	// only when a condition with a comprehension, the one part of an
	// evaluation that checks it, is evaluated.
	var frame *interpreter.ExecutionFrame
	withCtx := false
	eval := func(c *compiledRule) {
		if c.prg == nil {
			v.require(c)
			return
		}
		if listTime && c.args {
			return
		}
		if req == nil {
			req = rs.request(p, msg, revision)
		}
		if c.args && req.argsErr != nil {
			v.denyBy(c, req.argsErr) // errInvalidMessage: 400
			return
		}
		if frame == nil {
			frame, _ = interpreter.NewExecutionFrame(req) // a *ruleRequest is an Activation: no error
		}
		if c.loops && !withCtx {
			withCtx = frame.SetContext(ctx, ruleInterruptCheck) == nil
		}
		out, _, err := c.prg.Eval(frame)
		if err != nil {
			if withCtx && errors.Is(err, interpreter.InterruptError{}) {
				err = fmt.Errorf("%w: %w", err, context.Cause(ctx))
			}
			v.denyBy(c, fmt.Errorf("%w: %w", errRuleFailed, err))
			return
		}
		b, ok := celBool(out)
		switch {
		case !ok:
			v.denyBy(c, fmt.Errorf("%w: not a bool", errRuleFailed))
		case b && c.deny:
			v.denyBy(c, errRuleDenied)
		case b:
			v.require(c)
		}
	}
	rs.each(msg, eval)
	if frame != nil {
		frame.Close()
	}
	return v
}

// each calls fn with every rule selecting msg (a rule selected twice is
// evaluated twice; the outcome is the same).
func (rs *ruleSet) each(msg *message, fn func(*compiledRule)) {
	for _, c := range rs.every {
		fn(c)
	}
	if !msg.method.present {
		return
	}
	method := msg.method.v
	for _, c := range rs.methods[string(method)] {
		fn(c)
	}
	var pats *names
	switch string(method) {
	case methodToolsCall:
		pats = &rs.tools
	case methodPromptsGet:
		pats = &rs.prompts
	case methodResourceRead, methodResourcesSubscribe:
		if rs.hasRes && msg.uri.str {
			if key, ok := canonicalResource(string(msg.uri.v)); ok {
				rs.res.each(key, fn)
			} else {
				// A URI rules cannot match is judged by none of them:
				// fail closed.
				fn(nonCanonicalRule)
			}
		}
	}
	if pats != nil && msg.name.str {
		pats.each(string(msg.name.v), fn)
	}
}

// ruleInterruptCheck is how many comprehension iterations pass between
// two checks of the request's context.
const ruleInterruptCheck = 1000

// nonCanonicalRule denies a resource request whose URI cannot be put in
// canonical form while resource-prefix rules exist.
var nonCanonicalRule = &compiledRule{name: "(canonical_uri)", deny: true}

func (v *verdict) denyBy(c *compiledRule, err error) {
	if v.deny == nil || c.name < v.deny.name {
		v.deny, v.err = c, err
	}
}

func (v *verdict) require(c *compiledRule) {
	if c.deny {
		v.denyBy(c, errRuleDenied)
		return
	}
	v.scopes = appendUnique(v.scopes, c.scopes...)
	if v.rule == nil || c.name < v.rule.name {
		v.rule = c
	}
}

// request builds the activation of msg for p.
func (rs *ruleSet) request(p *Principal, msg *message, revision string) *ruleRequest {
	a := &ruleRequest{rs: rs, p: p, method: msg.method.v, revision: revision}
	a.user = record{kind: rs.user, req: a}
	a.mcp = record{kind: rs.mcp, req: a}
	if msg.name.str {
		a.name = msg.name.v
	}
	if msg.uri.str {
		a.uri = msg.uri.v
	}
	if rs.anyArgs {
		var args map[string]any
		args, a.argsErr = decodeArgs(msg.args, rs.argNames)
		if args != nil {
			a.args = types.DefaultTypeAdapter.NativeToValue(args)
		}
	}
	return a
}

var (
	errArgsNotObject = fmt.Errorf("%w: arguments are not an object", errInvalidMessage)
	errArgsCase      = fmt.Errorf("%w: an argument name is a case variant of a name rules use", errInvalidMessage)
)

// decodeArgs decodes raw, the raw params.arguments (nil: absent), as the
// rules see it: an object decoded by the module's strict reader, numbers
// as float64 (as JavaScript servers read them). An argument name at any
// depth that equals a name the rules use under Unicode case folding but
// not byte for byte is refused: a server decoding into a struct
// (encoding/json matches field names case-insensitively) would read it as
// the name the rule checked.
func decodeArgs(raw []byte, names []string) (map[string]any, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var v any
	if err := strictjson.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidMessage, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errArgsNotObject
	}
	if caseVariant(obj, names, 0) {
		return nil, errArgsCase
	}
	if tooLarge(obj, 0) {
		return nil, errRuleInput
	}
	return obj, nil
}

// errRuleInput: a list or map of the arguments or claims holds more than
// maxRuleEntries entries, the size the cost bound of rules assumes: the
// rules reading it deny.
var errRuleInput = fmt.Errorf("%w: a list or map holds more than %d entries", errRuleFailed, maxRuleEntries)

// tooLarge reports whether v holds, at any depth, a list or map of more
// than maxRuleEntries entries.
func tooLarge(v any, depth int) bool {
	if depth > 10000 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) > maxRuleEntries {
			return true
		}
		for _, e := range x {
			if tooLarge(e, depth+1) {
				return true
			}
		}
	case []any:
		if len(x) > maxRuleEntries {
			return true
		}
		for _, e := range x {
			if tooLarge(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// caseVariant reports whether v holds, at any depth, an object member name
// that is a case variant of one of names.
func caseVariant(v any, names []string, depth int) bool {
	if depth > 10000 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			for _, n := range names {
				if k != n && strings.EqualFold(k, n) {
					return true
				}
			}
			if caseVariant(e, names, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if caseVariant(e, names, depth+1) {
				return true
			}
		}
	}
	return false
}

// applyRules judges msg, authorized for p with the operation of g, by the
// rules, and answers a denial (the terminal 403) or a step-up (403
// insufficient_scope for g's scopes and the rules', through the one
// step-up path, [Middleware.insufficient]). It reports whether it
// answered.
func (m *Middleware) applyRules(w http.ResponseWriter, r *http.Request, p *Principal, g *grant, msg *message) bool {
	v := m.rules.judge(r.Context(), p, msg, versionLabel(r.Header))
	switch {
	case v.deny != nil && errors.Is(v.err, errInvalidMessage):
		// Arguments a rule must read but cannot (not an object, a case
		// variant of a name it reads): refused as any unauthorizable body.
		m.refuse(w, r, &refusal{err: v.err, p: p, g: g, id: msg.id, rule: v.deny.name, args: msg.args})
		return true
	case v.deny != nil:
		if errors.Is(v.err, errRuleFailed) {
			m.log.LogAttrs(r.Context(), slog.LevelWarn, "middleware: rule failed, request denied",
				slog.String("rule", v.deny.name), slog.String("error", v.err.Error()))
		}
		m.refuse(w, r, &refusal{err: &ruleError{rule: v.deny.name, err: v.err}, p: p, g: g, rule: v.deny.name, args: msg.args})
		return true
	case len(v.scopes) == 0:
		return false
	}
	required := appendUnique(slices.Clone(g.op.scopes), v.scopes...)
	missing := m.missing(p.Scopes, required)
	if missing == nil {
		return false
	}
	rf := &refusal{p: p, g: g, rule: v.rule.name, args: msg.args}
	m.insufficient(w, r, rf, scopeNeed(required), missing)
	return true
}

// listRules applies the rules to a list entry (list is the list method,
// name the entry's name or URI) for p at list time, with op the
// operation of a call of it: it returns the name of the rule by which no
// call of p could pass (a rule that does not read arguments denies, or
// fails) as deny, and otherwise the operation a call needs, op with the
// scopes of the rules that add scopes whatever the arguments, and the
// smallest name of those rules as require. Rules reading arguments decide
// nothing here: such an entry is listed (docs/policy.md, "List time and
// call time").
func (m *Middleware) listRules(p *Principal, list, name string, op *operation) (_ *operation, deny, require string) {
	if p == nil || p.Anonymous {
		return op, "", ""
	}
	msg, ok := callOf(list, name)
	if !ok {
		return op, "", "" // a template names no one resource
	}
	v := m.rules.judgeAt(context.Background(), p, &msg, "", true)
	switch {
	case v.deny != nil:
		return op, v.deny.name, ""
	case len(v.scopes) == 0:
		return op, "", ""
	}
	return m.newOperation(op.scopes, v.scopes), "", v.rule.name
}
