package stdiobridge

import (
	"os"
	"testing"

	"github.com/mcpguard/mcpguard/internal/stdiobridge/testserver"
)

// serverEnv makes the test binary a stdio MCP server (testserver.Main)
// instead of the tests.
const serverEnv = testserver.Env

func TestMain(m *testing.M) {
	if os.Getenv(seqEnv) != "" { // before serverEnv, which newHarness sets
		seqMain() // seq_test.go
		return
	}
	if os.Getenv(serverEnv) != "" {
		testserver.Main()
		return
	}
	if os.Getenv(pdeathEnv) != "" {
		pdeathMain() // pdeath_test.go
		return
	}
	if os.Getenv(hostileEnv) != "" {
		hostileMain() // attack_test.go
		return
	}
	os.Exit(m.Run())
}
