package validate

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: validate imports only
// the standard library (never net/http), go-jose, internal/strictjson and internal/scopetoken.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			"github.com/go-jose/go-jose/v4/...",
			"github.com/mcpguard/mcpguard/internal/strictjson",
			"github.com/mcpguard/mcpguard/internal/jws",       // the one JWS verifier
			"github.com/mcpguard/mcpguard/internal/jwtclaims", // NumericDate, CanonicalURI
			"github.com/mcpguard/mcpguard/internal/scopetoken",
			"github.com/mcpguard/mcpguard/internal/fairlru",
			"github.com/go-json-experiment/json/...", // through internal/strictjson
		},
		BadDeps: map[string]string{
			"net/http":                         "no HTTP in token checking; key I/O is behind KeySource",
			"github.com/golang-jwt/jwt/v5":     "tokens are verified with go-jose only",
			"github.com/MicahParks/keyfunc/v3": "belongs in validate/jwks",
			"github.com/MicahParks/jwkset":     "belongs in validate/jwks",
		},
	}.Check(t, ".")
}
