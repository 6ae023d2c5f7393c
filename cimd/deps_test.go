package cimd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: cimd may import the
// standard library, asmeta, internal/fetch and a short list of third-party
// packages, and never validate, challenge, prm or middleware.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/cimd/...", deptest.Module + "/asmeta/...", deptest.Module + "/internal/fetch/...", deptest.Module + "/internal/scopetoken",
			"code.dny.dev/ssrf/...", "go.etcd.io/bbolt/...", "golang.org/x/time/...", "golang.org/x/sync/...",
			"golang.org/x/sys/...", // bbolt's own dependency
		},
	}.Check(t, ".")
}
