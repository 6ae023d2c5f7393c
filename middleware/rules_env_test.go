package middleware

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	celref "github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The environment rule conditions had before user and mcp became records
// (rules_env.go): cel-go's reflection-based native types over these Go
// structs. TestRuleEnvMatchesNativeTypes holds the records to it.
type ruleUser struct {
	Issuer  string   `cel:"issuer"`
	Subject string   `cel:"subject"`
	Client  string   `cel:"client"`
	Tenant  string   `cel:"tenant"`
	Scopes  []string `cel:"scopes"`
}

type ruleMCP struct {
	Method   string   `cel:"method"`
	Name     string   `cel:"name"`
	URI      string   `cel:"uri"`
	Revision string   `cel:"revision"`
	Args     ruleArgs `cel:"args"`
}

type ruleArgs struct{ traits.Mapper }

func (ruleArgs) Type() celref.Type { return argsType }

func nativeRuleEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(
		func(env *cel.Env) (*cel.Env, error) {
			p, a, err := types.ComposeTypes(env.CELTypeProvider(), env.CELTypeAdapter(),
				types.ParseStructTags(true), reflect.TypeFor[ruleUser](), reflect.TypeFor[ruleMCP]())
			if err != nil {
				return nil, err
			}
			if env, err = cel.CustomTypeAdapter(a)(env); err != nil {
				return nil, err
			}
			return cel.CustomTypeProvider(p)(env)
		},
		cel.Variable("user", cel.ObjectType(userTypeName)),
		cel.Variable("mcp", cel.ObjectType(mcpTypeName)),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestRuleEnvMatchesNativeTypes evaluates conditions over user and mcp
// (field reads, has(), dyn(), equality, type(), construction, typing
// errors) with the records and with the native types they replaced, for
// principals and requests with fields set and empty: the same compile
// errors, output types and results. One difference is left out: reading
// args of a constructed middleware.ruleMCP{} panicked inside cel-go with
// the native types (an internal error, so a denial) and is {} now.
func TestRuleEnvMatchesNativeTypes(t *testing.T) {
	native := nativeRuleEnv(t)
	env, userT, mcpT, err := newRuleEnv()
	if err != nil {
		t.Fatal(err)
	}
	exprs := []string{
		"user.issuer == 'https://iss' && user.subject == 'sub' && user.client == 'cli' && user.tenant == 't'",
		"user.tenant", "user.scopes", "mcp.method", "mcp.name", "mcp.uri", "mcp.revision", "mcp.args",
		"has(user.tenant)", "has(user.issuer)", "has(user.scopes)", "has(mcp.name)", "has(mcp.uri)", "has(mcp.args)", "has(mcp.revision)",
		"'a' in user.scopes", "size(user.scopes)", "user.scopes == []", "user.scopes == ['a', 'b']",
		"mcp.args.location", "has(mcp.args.location)", "size(mcp.args)", "mcp.args == {}", "'location' in mcp.args",
		"mcp.args.location == 'Paris'", "mcp.args.n > 1.0", "mcp.args.n > 1", "mcp.args.nested.k",
		"has(mcp.args.tenant) && mcp.args.tenant != user.tenant",
		"user.scopes.exists(s, s == user.tenant)", "mcp.args.all(k, k != user.subject)",
		"dyn(user).tenant", "has(dyn(user).tenant)", "dyn(mcp).args", "has(dyn(mcp).name)", "dyn(user).nosuch",
		"user == user", "mcp == mcp", "dyn(user) == dyn(mcp)",
		"type(user) == type(user)", "type(user) == middleware.ruleUser", "type(mcp) == middleware.ruleMCP",
		"middleware.ruleUser{issuer: 'x'}.issuer", "middleware.ruleUser{issuer: 'x'}.tenant", "has(middleware.ruleUser{issuer: 'x'}.tenant)",
		"middleware.ruleUser{}.scopes", "middleware.ruleMCP{name: 'n'}.args",
		"middleware.ruleUser{tenant: 't'} == middleware.ruleUser{tenant: 't'}",
		"middleware.ruleUser{tenant: 't'} == middleware.ruleUser{tenant: 'u'}",
		"user.tennant", "mcp.arg", "user.scopes + 1", "user.issuer + user.tenant", "middleware.ruleUser{nosuch: 1}",
		"user.scopes[0]", "user.scopes[5]", "claims.x", "optional.of(user.tenant).hasValue()",
	}
	principals := []*Principal{
		{Issuer: "https://iss", Subject: "sub", ClientID: "cli", Tenant: "t", Scopes: []string{"a", "b"}},
		{Subject: "sub"},
	}
	type req struct {
		method, name, uri, revision string
		args                        map[string]any
	}
	reqs := []req{
		{"tools/call", "get_weather", "", modernRev, map[string]any{"location": "Paris", "n": 2.0, "tenant": "u", "nested": map[string]any{"k": "v"}}},
		{"resources/read", "", "file:///a", "", nil},
		{"tools/call", "x", "", legacyRev, map[string]any{}},
	}
	for _, expr := range exprs {
		nAst, nIss := native.Compile(expr)
		rAst, rIss := env.Compile(expr)
		if (nIss.Err() == nil) != (rIss.Err() == nil) {
			t.Errorf("%s: compile error %v, native types %v", expr, rIss.Err(), nIss.Err())
			continue
		}
		if nIss.Err() != nil {
			continue
		}
		if !nAst.OutputType().IsExactType(rAst.OutputType()) {
			t.Errorf("%s: type %s, native types %s", expr, rAst.OutputType(), nAst.OutputType())
		}
		nPrg, err := native.Program(nAst, cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			t.Fatal(err)
		}
		rPrg, err := env.Program(rAst, ruleProgramOptions(userT, mcpT)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range principals {
			for _, rq := range reqs {
				scopes := p.Scopes
				if scopes == nil {
					scopes = []string{}
				}
				args := rq.args
				if args == nil {
					args = map[string]any{}
				}
				nOut, _, nErr := nPrg.ContextEval(context.Background(), map[string]any{
					"user": &ruleUser{Issuer: p.Issuer, Subject: p.Subject, Client: p.ClientID, Tenant: p.Tenant, Scopes: scopes},
					"mcp":  &ruleMCP{Method: rq.method, Name: rq.name, URI: rq.uri, Revision: rq.revision, Args: ruleArgs{types.DefaultTypeAdapter.NativeToValue(args).(traits.Mapper)}},
				})
				// The method and issuer interned (ruleSet.intern), the
				// name and URI made per request: both paths.
				rs := &ruleSet{}
				rs.intern(slices.Values([]string{rq.method, p.Issuer}))
				a := &ruleRequest{rs: rs, p: p, method: []byte(rq.method), name: []byte(rq.name), uri: []byte(rq.uri), revision: rq.revision}
				a.user, a.mcp = record{kind: userT, req: a}, record{kind: mcpT, req: a}
				if rq.args != nil {
					a.args = types.DefaultTypeAdapter.NativeToValue(rq.args)
				}
				rOut, _, rErr := rPrg.Eval(a)
				switch {
				case (nErr == nil) != (rErr == nil):
					t.Errorf("%s for %+v %+v: error %v, native types %v", expr, p, rq, rErr, nErr)
				case nErr != nil:
				case !sameCEL(nOut, rOut):
					t.Errorf("%s for %+v %+v: %v, native types %v", expr, p, rq, rOut, nOut)
				}
			}
		}
	}
}

// sameCEL reports whether a (a native-types result) and b (a records
// result) are the same CEL value; records and native objects compare by
// their type names only. The args of a native mcp a condition built
// without them is a nil map (whose use panics); records make it {}.
func sameCEL(a, b celref.Val) bool {
	if ra, ok := a.(ruleArgs); ok {
		if ra.Mapper == nil {
			return b.Equal(types.DefaultTypeAdapter.NativeToValue(map[string]any{})) == types.True
		}
		a = ra.Mapper
	}
	if _, ok := b.(*record); ok {
		return a.Type().TypeName() == b.Type().TypeName()
	}
	if at, ok := a.(*types.Type); ok {
		bt, ok := b.(*types.Type)
		return ok && at.TypeName() == bt.TypeName()
	}
	return a.Type().TypeName() == b.Type().TypeName() && a.Equal(b) == types.True
}

// TestRuleContextEnded: a condition with a comprehension stops when the
// request's context has ended and denies (errRuleFailed wrapping the
// context's cause); the conditions without one, evaluated in the same
// frame before and after it, still decide.
func TestRuleContextEnded(t *testing.T) {
	rs, err := compileRules([]Rule{
		{Name: "a-plain", Tools: []string{"t"}, RequireScopes: []string{"x"}, When: "user.subject == 'sub'"},
		{Name: "b-loop", Tools: []string{"t"}, DenyWhen: "mcp.args.xs.exists(x, x == 'never')"},
		{Name: "c-plain", Tools: []string{"t*"}, RequireScopes: []string{"y"}, When: "mcp.args.n == 1.0"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]string, 5000)
	for i := range xs {
		xs[i] = `"a"`
	}
	msg := message{method: stringField(methodToolsCall), name: stringField("t"), args: []byte(`{"n":1,"xs":[` + strings.Join(xs, ",") + `]}`)}
	p := &Principal{Subject: "sub"}
	if v := rs.judge(context.Background(), p, &msg, ""); v.deny != nil || !slices.Equal(v.scopes, []string{"x", "y"}) {
		t.Fatalf("live context: deny %v (%v), scopes %v; want none, [x y]", v.deny, v.err, v.scopes)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("client gone")
	cancel(cause)
	v := rs.judge(ctx, p, &msg, "")
	if v.deny == nil || v.deny.name != "b-loop" || !errors.Is(v.err, errRuleFailed) || !errors.Is(v.err, cause) || !slices.Equal(v.scopes, []string{"x", "y"}) {
		t.Fatalf("ended context: deny %v (%v), scopes %v; want b-loop failed with the cause, [x y]", v.deny, v.err, v.scopes)
	}
}
