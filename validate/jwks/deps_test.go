package jwks

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md. validate/jwks may import
// validate, asmeta, internal/fetch, jwkset, go-jose, x/sync and x/time; it
// must not pull in golang-jwt (through keyfunc) or middleware.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/validate/...",
			deptest.Module + "/asmeta/...",
			deptest.Module + "/internal/fetch/...",
			"github.com/MicahParks/jwkset/...",
			"github.com/go-jose/go-jose/v4/...",
			"golang.org/x/sync/...",
			"golang.org/x/time/...",
			"code.dny.dev/ssrf/...",                  // through internal/fetch
			deptest.Module + "/internal/strictjson",  // the one JSON reader
			deptest.Module + "/internal/fairlru",     // through validate
			deptest.Module + "/internal/jws",         // through validate
			deptest.Module + "/internal/jwtclaims",   // through validate
			deptest.Module + "/internal/scopetoken",  // the one scope grammar (through validate)
			"github.com/go-json-experiment/json/...", // through internal/strictjson
		},
	}.Check(t, ".")
}
