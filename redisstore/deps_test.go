package redisstore_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: redisstore links go-redis and cimd (for the Client type), and
// never middleware, validate or an SDK: the step-up and replay stores
// satisfy their interfaces structurally. And nothing but examples and tests
// imports it, so a program that does not use it does not link go-redis.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/cimd",
			deptest.Module + "/internal/clientrecord",
			"github.com/redis/go-redis/v9",
		},
	}.Check(t, "github.com/mcpguard/mcpguard/redisstore")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps: map[string]string{
			deptest.Module + "/middleware/...": "the step-up and owner stores satisfy middleware.StepUpStore and OwnerStore structurally",
			deptest.Module + "/validate/...":   "the replay store satisfies validate/dpop's interface structurally",
			"go.etcd.io/bbolt/...":             "no second storage engine",
		},
	}.Check(t, "github.com/mcpguard/mcpguard/redisstore")
	for _, pkg := range []string{deptest.Module + "/middleware", deptest.Module + "/cimd", deptest.Module, deptest.Module + "/validate/..."} {
		deptest.DepChecker{
			AllowUnlisted: true,
			BadDeps:       map[string]string{"github.com/redis/go-redis/...": "only redisstore links go-redis"},
		}.Check(t, pkg)
	}
}
