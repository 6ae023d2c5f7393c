// Package heldport hands tests loopback ports for servers they start as
// other processes, whose address must be known before they start: ports
// that the system gives neither to port 0 nor to outgoing connections
// (below or above net.ipv4.ip_local_port_range), each held by the test
// until it is taken, so that no other process can take one in between.
//
//	ps := heldport.New(t, 2)
//	addr := ps.Take() // "127.0.0.1:NNNNN", free until the server binds it
package heldport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Ports are loopback ports held for a test.
type Ports struct {
	t    testing.TB
	held []net.Listener
}

// New holds n loopback ports outside the ephemeral range until they are
// taken or the test ends; it fails the test when there are not enough.
func New(t testing.TB, n int) *Ports {
	t.Helper()
	lo, hi := 32768, 60999 // Linux's default range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &lo, &hi)
	}
	var free [][2]int // candidate ranges, [from, to)
	if lo-10000 >= 2*n {
		free = append(free, [2]int{10000, lo})
	}
	if 65535-hi >= 2*n {
		free = append(free, [2]int{hi + 1, 65536})
	}
	if len(free) == 0 {
		t.Fatalf("no loopback ports outside the ephemeral range %d-%d", lo, hi)
	}
	ps := &Ports{t: t}
	t.Cleanup(func() {
		for _, l := range ps.held {
			_ = l.Close()
		}
	})
	r := free[0]
	for port, tries := r[0]+rand.IntN(r[1]-r[0]), 0; len(ps.held) < n; port, tries = port+1, tries+1 {
		if tries == r[1]-r[0] {
			t.Fatalf("only %d free loopback ports in %d-%d", len(ps.held), r[0], r[1]-1)
		}
		if port >= r[1] {
			port = r[0]
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			ps.held = append(ps.held, l)
		}
	}
	return ps
}

// Take releases a held port, as host:port, for the process about to be
// started on it.
func (ps *Ports) Take() string {
	ps.t.Helper()
	if len(ps.held) == 0 {
		ps.t.Fatal("heldport: no held port left")
	}
	l := ps.held[0]
	ps.held = ps.held[1:]
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
