package proxy_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the proxy is an edge: the root package (a Guard per route)
// and the packages it configures, go-jose for its assertions, one YAML
// library for the file; never an MCP SDK (it speaks HTTP only), and
// nothing but the command imports it.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module, deptest.Module + "/middleware", deptest.Module + "/prm", deptest.Module + "/asmeta", deptest.Module + "/validate",
			deptest.Module + "/validate/jwks", deptest.Module + "/validate/dpop", deptest.Module + "/validate/introspect", deptest.Module + "/internal/fetch", deptest.Module + "/internal/strictjson", deptest.Module + "/internal/httptoken", deptest.Module + "/internal/answer", deptest.Module + "/internal/mwdefault", deptest.Module + "/internal/stdiobridge", deptest.Module + "/internal/keyalg",
			deptest.Module + "/redisstore", "github.com/redis/go-redis/v9",
			"github.com/go-jose/go-jose/v4", "github.com/go-jose/go-jose/v4/jwt",
			"go.yaml.in/yaml/v3",
			"golang.org/x/sync/singleflight",
		},
	}.Check(t, "github.com/mcpguard/mcpguard/proxy")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			"github.com/modelcontextprotocol/...": "the proxy speaks HTTP; SDKs are for adapters and tests",
			"github.com/mark3labs/...":            "the proxy speaks HTTP; SDKs are for adapters and tests",
		},
	}.Check(t, "github.com/mcpguard/mcpguard/proxy")
	deptest.CheckNotImported(t, deptest.Module+"/proxy", deptest.Module+"/cmd/...", deptest.Module+"/integration/...", deptest.Module+"/examples/...")
}
