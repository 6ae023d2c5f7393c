package middleware

import (
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	celref "github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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

// ruleUser is the CEL type of "user".
type ruleUser struct {
	Issuer  string   `cel:"issuer"`
	Subject string   `cel:"subject"`
	Client  string   `cel:"client"`
	Tenant  string   `cel:"tenant"`
	Scopes  []string `cel:"scopes"`
}

// ruleMCP is the CEL type of "mcp".
type ruleMCP struct {
	Method   string   `cel:"method"`
	Name     string   `cel:"name"`
	URI      string   `cel:"uri"`
	Revision string   `cel:"revision"`
	Args     ruleArgs `cel:"args"`
}

// ruleArgs is mcp.args: the arguments as a CEL map(string, dyn). The
// native type provider maps no Go interface type, so the map is a CEL
// value whose zero value names its type.
type ruleArgs struct{ traits.Mapper }

var argsType = types.NewMapType(types.StringType, types.DynType)

// Type implements celref.Val, also for the zero value.
func (ruleArgs) Type() celref.Type { return argsType }

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

// newRuleEnv returns the CEL environment of rule conditions.
func newRuleEnv() (*cel.Env, error) {
	return cel.NewEnv(
		nativeTypes(types.ParseStructTags(true), reflect.TypeFor[ruleUser](), reflect.TypeFor[ruleMCP]()),
		cel.Variable("user", cel.ObjectType("middleware.ruleUser")),
		cel.Variable("mcp", cel.ObjectType("middleware.ruleMCP")),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
	)
}

// nativeTypes declares the Go struct types of user and mcp to env, by
// their `cel` tags (what cel-go's ext.NativeTypes does, without the ext
// package and its dependencies).
func nativeTypes(args ...any) cel.EnvOption {
	return func(env *cel.Env) (*cel.Env, error) {
		p, a, err := types.ComposeTypes(env.CELTypeProvider(), env.CELTypeAdapter(), args...)
		if err != nil {
			return nil, err
		}
		if env, err = cel.CustomTypeAdapter(a)(env); err != nil {
			return nil, err
		}
		return cel.CustomTypeProvider(p)(env)
	}
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
