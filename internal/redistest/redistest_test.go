package redistest

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}

func TestStartStop(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("PING: %v", err)
	}
	s.Stop()
	if err := ping(s.Addr); err == nil {
		t.Fatal("PING after Stop succeeded")
	}
	s.Stop() // idempotent
}
