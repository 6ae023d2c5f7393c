package middleware

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering of docs/DESIGN.md: middleware imports the
// standard library, validate, validate/dpop, challenge and prm, and go-jose only through
// validate. Never cimd, authtest, internal/fetch, validate/jwks, or any
// other third-party module (go list -deps covers non-test files only).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/validate",
			deptest.Module + "/validate/dpop",        // DPoP proofs (RFC 9449), core like validate
			"github.com/go-json-experiment/json/...", // pulled in by validate/dpop
			deptest.Module + "/challenge",
			deptest.Module + "/prm",
			deptest.Module + "/internal/scopetoken",  // stdlib-only scope grammar
			deptest.Module + "/internal/httptoken",   // stdlib-only token grammar (RFC 9110)
			"github.com/go-jose/go-jose/v4/...",      // pulled in by validate (jose.JSONWebKey in its API)
			deptest.Module + "/internal/strictjson",  // the one JSON reader
			deptest.Module + "/internal/fairlru",     // the one fair bounded map (stdlib only)
			deptest.Module + "/internal/mwdefault",   // the Config defaults (constants only)
			deptest.Module + "/internal/mcprev",      // the one rule of modern revisions (stdlib only)
			deptest.Module + "/internal/jws",         // through validate
			deptest.Module + "/internal/jwtclaims",   // through validate
			deptest.Module + "/internal/answer",      // reading and rewriting answers (task binding)
			"github.com/go-json-experiment/json/...", // through internal/strictjson
			// Config.Rules: CEL (rules.go), and what cel-go itself imports.
			"github.com/google/cel-go/...",
			"cel.dev/expr/...",
			"github.com/antlr4-go/antlr/v4/...",
			"google.golang.org/protobuf/...",
			"google.golang.org/genproto/googleapis/...",
			"golang.org/x/exp/...",
			"go.yaml.in/yaml/v3/...",
		},
	}.Check(t, ".")
	// Direct imports: go-jose must come through validate, not be imported here.
	deptest.DepChecker{
		Direct:        true,
		AllowUnlisted: true,
		BadDeps: map[string]string{
			"github.com/go-jose/go-jose/v4/...": "go-jose must come through validate",
			"testing":                           "middleware is imported by non-test code",
		},
	}.Check(t, ".")
}
