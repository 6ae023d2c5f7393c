package proxy

import "github.com/mcpguard/mcpguard/middleware"

// Policy is a route's rules beyond scopes (docs/policy.md, "Rules"):
// conditions in CEL over the caller, the verified token's claims and the
// MCP request, decided after the token and scopes, before the request
// reaches the upstream. Every rule is checked when the configuration is
// loaded (mcpguard proxy -check): one that does not compile, names an
// undeclared variable, is not of type bool or may cost more than the
// bound is refused with its name and position.
type Policy struct {
	// Rules are the route's rules (middleware.Rule). Empty means none.
	Rules []PolicyRule `yaml:"rules"`
	// TenantArgument names a tools/call and prompts/get argument that
	// must equal the caller's tenant (the validation.tenant_claim) when a
	// request carries it (middleware Config.TenantArgument). Empty means
	// no such rule.
	TenantArgument string `yaml:"tenant_argument"`
}

// PolicyRule is one rule of [Policy], as middleware.Rule.
type PolicyRule struct {
	// Name identifies the rule in errors, logs and decisions. Required,
	// unique.
	Name string `yaml:"name"`
	// Methods, Tools, Prompts and Resources select the requests the rule
	// judges (Tools and Prompts: name patterns with "*"; Resources: URI
	// prefixes). None: every request.
	Methods   []string `yaml:"methods"`
	Tools     []string `yaml:"tools"`
	Prompts   []string `yaml:"prompts"`
	Resources []string `yaml:"resources"`
	// DenyWhen is a deny rule's condition.
	DenyWhen string `yaml:"deny_when"`
	// RequireScopes are the scopes a require-scopes rule adds when When
	// holds (or is empty).
	RequireScopes []string `yaml:"require_scopes"`
	When          string   `yaml:"when"`
}

// rules returns the middleware rules of p.
func (p Policy) rules() []middleware.Rule {
	if len(p.Rules) == 0 {
		return nil
	}
	out := make([]middleware.Rule, len(p.Rules))
	for i, r := range p.Rules {
		out[i] = middleware.Rule{
			Name: r.Name, Methods: r.Methods, Tools: r.Tools, Prompts: r.Prompts, Resources: r.Resources,
			DenyWhen: r.DenyWhen, RequireScopes: r.RequireScopes, When: r.When,
		}
	}
	return out
}
