package heldport

import (
	"net"
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}

// TestTake: the ports are distinct, outside the ephemeral range, held
// (another listener cannot bind one) until taken, then free.
func TestTake(t *testing.T) {
	ps := New(t, 3)
	seen := map[string]bool{}
	for _, l := range ps.held {
		if _, err := net.Listen("tcp", l.Addr().String()); err == nil {
			t.Errorf("%s is not held", l.Addr())
		}
	}
	for range 3 {
		addr := ps.Take()
		if seen[addr] {
			t.Errorf("%s twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("taken %s cannot be bound: %v", addr, err)
			continue
		}
		l.Close()
	}
}
