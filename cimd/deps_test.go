package cimd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: cimd may import the
// standard library, asmeta, internal/fetch and a short list of third-party
// packages, and never validate, challenge, prm or middleware. It links no
// storage engine: bbolt (and its golang.org/x/sys) is cimd/boltstore's.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/cimd", deptest.Module + "/asmeta/...", deptest.Module + "/internal/fetch/...", deptest.Module + "/internal/scopetoken",
			"code.dny.dev/ssrf/...", "golang.org/x/time/...", "golang.org/x/sync/...",
			deptest.Module + "/internal/strictjson",   // the one JSON reader
			deptest.Module + "/internal/fairlru",      // the one fair bounded map
			deptest.Module + "/internal/clientrecord", // the stored form of a Client, shared with the stores
			"github.com/go-json-experiment/json/...",  // through internal/strictjson
		},
		BadDeps: map[string]string{
			"go.etcd.io/bbolt/...":                 "a storage engine: cimd/boltstore links it, cimd does not",
			"golang.org/x/sys/...":                 "bbolt's dependency; cimd needs none",
			"github.com/redis/go-redis/...":        "redisstore links it, cimd does not",
			deptest.Module + "/cimd/boltstore/...": "the subpackage imports cimd, not the reverse",
		},
	}.Check(t, ".")
}
