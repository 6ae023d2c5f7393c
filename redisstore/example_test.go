package redisstore_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/redisstore"
)

// Replicas of an MCP server share one step-up bound; replicas of an
// authorization server share dynamic registrations. (Not run: it needs a
// Redis; the tests start a real one.)
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	cfg := redisstore.Config{Client: rdb, Prefix: "prod:mcpguard:"}

	steps, err := redisstore.NewStepUpStore(cfg)
	if err != nil {
		panic(err)
	}
	_ = middleware.Config{StepUpStore: steps /* , Validator, Metadata, … */}

	clients, err := redisstore.NewClientStore(cfg)
	if err != nil {
		panic(err)
	}
	_ = cimd.DCRConfig{Store: clients}
	_ = cimd.RegistryConfig{Store: clients}

	replay, err := redisstore.NewReplayStore(cfg)
	if err != nil {
		panic(err)
	}
	_ = replay // validate/dpop's ReplayStore
}
