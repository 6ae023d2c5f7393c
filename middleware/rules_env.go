package middleware

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	celref "github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The environment a [Rule] condition is checked against and evaluated in
// (docs/policy.md, "Rules"): three variables, nothing else.
//
//   - user: the authenticated caller ([Principal]): issuer, subject,
//     client, tenant (strings) and scopes (a list of strings);
//   - claims: the verified token's claims set, a map from claim name to
//     its JSON value (objects are maps, arrays lists, numbers doubles);
//   - mcp: the request: method, name (tools/call, prompts/get), uri
//     (resources/read, resources/subscribe), revision (the
//     MCP-Protocol-Version header) and args (params.arguments of
//     tools/call and prompts/get, a map; empty when absent).

// user and mcp are CEL structs of the types below, declared to the
// checker by ruleTypes. Their values (record) are built per request from
// the principal and the body peek; each field becomes a CEL value on its
// first read, kept for the request's other conditions. cel-go's native
// types, which these replace, read every field through reflection and
// converted it again on every read.

// recordType is the CEL struct type of user or mcp.
type recordType struct {
	t      *types.Type
	names  []string
	fields map[string]*types.FieldType
	// value computes field i of a request's record; for req nil, the
	// field's zero value. has() reports a field absent when it is an
	// empty string; a list or map is always present.
	value func(req *ruleRequest, i int) celref.Val
}

const (
	userTypeName = "middleware.ruleUser"
	mcpTypeName  = "middleware.ruleMCP"
)

var (
	scopesType = types.NewListType(types.StringType)
	argsType   = types.NewMapType(types.StringType, types.DynType)
)

func newRecordType(name string, names []string, ftypes []*types.Type, value func(*ruleRequest, int) celref.Val) *recordType {
	rt := &recordType{t: types.NewObjectType(name), names: names, fields: map[string]*types.FieldType{}, value: value}
	for i, n := range names {
		rt.fields[n] = &types.FieldType{
			Type: ftypes[i],
			IsSet: func(obj any) bool {
				r, ok := obj.(*record)
				return ok && r.kind == rt && r.isSet(i)
			},
			GetFrom: func(obj any) (any, error) {
				r, ok := obj.(*record)
				if !ok || r.kind != rt {
					return nil, fmt.Errorf("no such field: %s", n)
				}
				return r.field(i), nil
			},
		}
	}
	return rt
}

// newUserType is the type of user: issuer, subject, client, tenant
// (strings) and scopes (list(string)).
func newUserType() *recordType {
	s := types.StringType
	return newRecordType(userTypeName, []string{"issuer", "subject", "client", "tenant", "scopes"},
		[]*types.Type{s, s, s, s, scopesType},
		func(req *ruleRequest, i int) celref.Val {
			if i == 4 {
				var scopes []string
				if req != nil {
					scopes = req.p.Scopes
				}
				if scopes == nil {
					scopes = []string{}
				}
				return &stringList{elems: scopes}
			}
			if req == nil {
				return types.String("")
			}
			p := req.p
			if i == 0 {
				if v, ok := req.rs.vals[p.Issuer]; ok {
					return v
				}
			}
			return types.String([...]string{p.Issuer, p.Subject, p.ClientID, p.Tenant}[i])
		})
}

// newMCPType is the type of mcp: method, name, uri, revision (strings)
// and args (map(string, dyn)).
func newMCPType() *recordType {
	s := types.StringType
	return newRecordType(mcpTypeName, []string{"method", "name", "uri", "revision", "args"},
		[]*types.Type{s, s, s, s, argsType},
		func(req *ruleRequest, i int) celref.Val {
			switch {
			case i == 4 && req != nil && req.args != nil:
				return req.args
			case i == 4:
				return types.DefaultTypeAdapter.NativeToValue(map[string]any{})
			case req == nil:
				return types.String("")
			case i == 3:
				if v, ok := req.rs.vals[req.revision]; ok {
					return v
				}
				return types.String(req.revision)
			}
			return req.rs.str([...][]byte{req.method, req.name, req.uri}[i])
		})
}

// stringList is user.scopes: cel-go's list of Go strings
// (types.NewStringList), made only when an operation needs it. Its
// Contains (the "in" operator) converts every element to a CEL value, two
// allocations each, before comparing it; a string is looked for here
// without converting anything, with the same result (CEL equality of two
// strings is byte equality). Size, Type and Value are cel-go's list's;
// every other operation, and "in" with another operand, is done by
// cel-go's list.
type stringList struct {
	elems []string
	l     traits.Lister
}

func (l *stringList) list() traits.Lister {
	if l.l == nil {
		l.l = types.NewStringList(types.DefaultTypeAdapter, l.elems)
	}
	return l.l
}

// Contains implements traits.Container.
func (l *stringList) Contains(elem celref.Val) celref.Val {
	s, ok := elem.(types.String)
	if !ok {
		return l.list().Contains(elem)
	}
	return types.Bool(slices.Contains(l.elems, string(s)))
}

// Size implements traits.Sizer.
func (l *stringList) Size() celref.Val { return types.Int(len(l.elems)) }

// Type implements celref.Val.
func (l *stringList) Type() celref.Type { return types.ListType }

// Value implements celref.Val.
func (l *stringList) Value() any { return l.elems }

// Add implements traits.Adder.
func (l *stringList) Add(other celref.Val) celref.Val { return l.list().Add(other) }

// Get implements traits.Indexer.
func (l *stringList) Get(i celref.Val) celref.Val { return l.list().Get(i) }

// Iterator implements traits.Iterable.
func (l *stringList) Iterator() traits.Iterator { return l.list().Iterator() }

// ConvertToNative implements celref.Val.
func (l *stringList) ConvertToNative(t reflect.Type) (any, error) { return l.list().ConvertToNative(t) }

// ConvertToType implements celref.Val.
func (l *stringList) ConvertToType(t celref.Type) celref.Val {
	if t == types.TypeType {
		return types.ListType
	}
	return l.list().ConvertToType(t)
}

// Equal implements celref.Val.
func (l *stringList) Equal(other celref.Val) celref.Val { return l.list().Equal(other) }

var _ traits.Lister = (*stringList)(nil)

// record is a value of a recordType: user or mcp of one request (req), or
// one a condition built (req nil, vals set).
type record struct {
	kind *recordType
	req  *ruleRequest
	vals [5]celref.Val
}

func (r *record) field(i int) celref.Val {
	if r.vals[i] == nil {
		r.vals[i] = r.kind.value(r.req, i)
	}
	return r.vals[i]
}

func (r *record) isSet(i int) bool {
	s, ok := r.field(i).(types.String)
	return !ok || s != ""
}

func (r *record) index(field celref.Val) (int, celref.Val) {
	name, ok := field.(types.String)
	if !ok {
		return 0, types.MaybeNoSuchOverloadErr(field)
	}
	if i := slices.Index(r.kind.names, string(name)); i >= 0 {
		return i, nil
	}
	return 0, types.NewErr("no such field: %s", string(name))
}

// ConvertToNative implements celref.Val: a record has no Go form.
func (r *record) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", r.kind.t.TypeName(), t)
}

// ConvertToType implements celref.Val.
func (r *record) ConvertToType(t celref.Type) celref.Val {
	switch {
	case t == types.TypeType:
		return r.kind.t
	case t.TypeName() == r.kind.t.TypeName():
		return r
	}
	return types.NewErr("type conversion error from '%s' to '%s'", r.kind.t.TypeName(), t.TypeName())
}

// Equal implements celref.Val: records of one type are equal when all their
// fields are.
func (r *record) Equal(other celref.Val) celref.Val {
	o, ok := other.(*record)
	if !ok || o.kind != r.kind {
		return types.False
	}
	for i := range r.kind.names {
		if r.field(i).Equal(o.field(i)) != types.True {
			return types.False
		}
	}
	return types.True
}

// Type implements celref.Val.
func (r *record) Type() celref.Type { return r.kind.t }

// Value implements celref.Val: the record itself, which the field getters
// read.
func (r *record) Value() any { return r }

// Get implements traits.Indexer (a field read through dyn()).
func (r *record) Get(field celref.Val) celref.Val {
	i, err := r.index(field)
	if err != nil {
		return err
	}
	return r.field(i)
}

// IsSet implements traits.FieldTester (has() through dyn()).
func (r *record) IsSet(field celref.Val) celref.Val {
	i, err := r.index(field)
	if err != nil {
		return err
	}
	return types.Bool(r.isSet(i))
}

var (
	_ celref.Val         = (*record)(nil)
	_ traits.Indexer     = (*record)(nil)
	_ traits.FieldTester = (*record)(nil)
)

// ruleTypes is the type provider of rule conditions: the environment's
// own, and the types of user and mcp.
type ruleTypes struct {
	types.Provider
	records map[string]*recordType
}

// FindIdent implements types.Provider: the type names of user and mcp.
func (p *ruleTypes) FindIdent(name string) (celref.Val, bool) {
	if rt, ok := p.records[name]; ok {
		return rt.t, true
	}
	return p.Provider.FindIdent(name)
}

// FindStructType implements types.Provider.
func (p *ruleTypes) FindStructType(name string) (*types.Type, bool) {
	if rt, ok := p.records[name]; ok {
		return types.NewTypeTypeWithParam(rt.t), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (p *ruleTypes) FindStructFieldNames(name string) ([]string, bool) {
	if rt, ok := p.records[name]; ok {
		return slices.Clone(rt.names), true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (p *ruleTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if rt, ok := p.records[name]; ok {
		ft, ok := rt.fields[field]
		return ft, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

// NewValue implements types.Provider: a record a condition builds, the
// fields it does not set zero.
func (p *ruleTypes) NewValue(name string, fields map[string]celref.Val) celref.Val {
	rt, ok := p.records[name]
	if !ok {
		return p.Provider.NewValue(name, fields)
	}
	r := &record{kind: rt}
	for n, v := range fields {
		i := slices.Index(rt.names, n)
		if i < 0 {
			return types.NewErr("no such field: %s", n)
		}
		r.vals[i] = v
	}
	return r
}

// Cost bounds of one condition (docs/policy.md, "Cost"). maxRuleCost
// bounds the static estimate, checked in New, computed with every list
// and map of the environment holding at most maxRuleEntries entries and
// every string at most maxRuleString bytes. Requests whose arguments or
// claims exceed maxRuleEntries in one list or map are denied by the
// rules that read them, so the estimate bounds the actual cost of every
// evaluation. cel-go's runtime CostLimit is not used: in v0.31 its
// tracker is quadratic in the length of a comprehension (measured: an
// exists() over 16,000 elements took 1.3 s; over 400,000, 115 s), which
// would turn the limit itself into a denial of service.
const (
	maxRuleCost    = 1_000_000
	maxRuleEntries = 10_000
	maxRuleString  = 1 << 20
)

// newRuleEnv returns the CEL environment of rule conditions and the types
// of user and mcp, which build their values.
func newRuleEnv() (*cel.Env, *recordType, *recordType, error) {
	user, mcp := newUserType(), newMCPType()
	env, err := cel.NewEnv(
		func(env *cel.Env) (*cel.Env, error) {
			return cel.CustomTypeProvider(&ruleTypes{
				Provider: env.CELTypeProvider(),
				records:  map[string]*recordType{userTypeName: user, mcpTypeName: mcp},
			})(env)
		},
		cel.Variable("user", user.t),
		cel.Variable("mcp", mcp.t),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
	)
	return env, user, mcp, err
}

// ruleProgramOptions are the options of every condition's program:
// cel-go's optimizations, the interrupt check of comprehensions, and
// fieldReads.
func ruleProgramOptions(user, mcp *recordType) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.InterruptCheckFrequency(ruleInterruptCheck),
		cel.CustomDecorator(fieldReads(user, mcp)),
	}
}

// fieldReads is the decorator of a condition's plan that reads a field of
// user or mcp (user.subject, mcp.args) straight from the request's record:
// one lookup of the variable and the field's value, where cel-go's
// attribute resolution passes it through its qualifier, the field's getter
// and its type adapter, to the same value. Only a plain read is
// decorated (cel-go's evalAttr: not a presence test, not an optional
// selection, one variable name, one field of the record type); a select
// on its result (mcp.args.tenant) qualifies it as cel-go qualifies any
// value. Whatever is not a record of the type at evaluation time is left
// to cel-go's plan. TestRuleEnvMatchesNativeTypes holds the results to
// cel-go's native types.
func fieldReads(user, mcp *recordType) interpreter.InterpretableDecorator {
	kinds := map[string]*recordType{"user": user, "mcp": mcp}
	return func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		ia, ok := i.(interpreter.InterpretableAttribute)
		if !ok || ia.IsOptional() || reflect.TypeOf(i).String() != "*interpreter.evalAttr" {
			return i, nil
		}
		na, ok := ia.Attr().(interpreter.NamespacedAttribute)
		if !ok || len(na.CandidateVariableNames()) != 1 || len(na.Qualifiers()) != 1 {
			return i, nil
		}
		name := na.CandidateVariableNames()[0]
		kind := kinds[name]
		cq, ok := na.Qualifiers()[0].(interpreter.ConstantQualifier)
		if kind == nil || !ok {
			return i, nil
		}
		field, ok := cq.Value().(types.String)
		idx := slices.Index(kind.names, string(field))
		if !ok || idx < 0 {
			return i, nil
		}
		return &fieldRead{InterpretableV2: ia, name: name, kind: kind, i: idx}, nil
	}
}

// fieldRead reads field i of the record named name (fieldReads). It is
// not an InterpretableAttribute, so that cel-go's planner never adds a
// qualifier to it: a select on it is a relative attribute of its value.
type fieldRead struct {
	interpreter.InterpretableV2 // cel-go's plan of the read: its ID, and the fallback
	name                        string
	kind                        *recordType
	i                           int
}

// Exec implements interpreter.InterpretableV2.
func (f *fieldRead) Exec(frame *interpreter.ExecutionFrame) celref.Val {
	if v, ok := frame.ResolveName(f.name); ok {
		if r, ok := v.(*record); ok && r.kind == f.kind {
			return r.field(f.i)
		}
	}
	return f.InterpretableV2.Exec(frame)
}

// Eval implements interpreter.Interpretable.
func (f *fieldRead) Eval(a interpreter.Activation) celref.Val {
	return f.Exec(interpreter.AsFrame(a))
}

// sizeEstimator bounds the size of every input for the static cost
// estimate: without it, any comprehension over an argument or a claim
// would be estimated unbounded.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: maxRuleString}
	}
	return &checker.SizeEstimate{Min: 0, Max: maxRuleEntries}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

var _ checker.CostEstimator = sizeEstimator{}

// celBool reports whether v is the CEL bool true.
func celBool(v any) (b, ok bool) {
	bv, ok := v.(types.Bool)
	return bool(bv), ok
}
