package introspect_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: validate/introspect
// imports validate, asmeta, internal/fetch, go-jose, x/oauth2 and x/sync,
// and never middleware (which imports validate: the dependency runs the
// other way, through middleware.TokenValidator).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/validate/...",
			deptest.Module + "/asmeta/...",
			deptest.Module + "/internal/fetch/...",
			"github.com/go-jose/go-jose/v4/...",
			"golang.org/x/oauth2/...",
			"github.com/go-json-experiment/json/...",
			"golang.org/x/sync/singleflight/...",
			"code.dny.dev/ssrf/...",                  // through internal/fetch
			deptest.Module + "/internal/strictjson",  // the one JSON reader
			deptest.Module + "/internal/fairlru",     // the one fair bounded map
			deptest.Module + "/internal/jws",         // through validate
			deptest.Module + "/internal/jwtclaims",   // through validate
			deptest.Module + "/internal/keyalg",      // a key's default algorithm, shared with client
			deptest.Module + "/internal/scopetoken",  // the one scope grammar (through validate)
			"github.com/go-json-experiment/json/...", // through internal/strictjson
		},
	}.Check(t, ".")
}
