package devas_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces docs/DESIGN.md: devas imports only the standard
// library, cimd, asmeta, prm, validate/dpop and go-jose; never middleware or
// validate.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/cimd/...",
			deptest.Module + "/asmeta/...",
			deptest.Module + "/prm/...",
			deptest.Module + "/validate/dpop", // token-request proofs (RFC 9449 §5)
			deptest.Module + "/internal/scopetoken",
			deptest.Module + "/internal/clientrecord",
			deptest.Module + "/internal/devtoken",   // the access token signer, shared with internal/devmint
			deptest.Module + "/internal/strictjson", // assertion claims (jwtbearer.go)
			"github.com/go-jose/go-jose/v4/...",
		},
	}.Check(t, ".")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			deptest.Module + "/middleware":               "devas is an edge; middleware must stay independent of it",
			deptest.Module + "/validate":                 "the AS must not depend on the RS validator",
			deptest.Module + "/authtest":                 "test support is not for production imports",
			"github.com/modelcontextprotocol/go-sdk/mcp": "only tests use the SDK",
			"testing": "devas is importable by non-test code",
		},
	}.Check(t, ".")
}
