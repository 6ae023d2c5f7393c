package cimd

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestResolveLoopbackSpellings: other spellings of a loopback address (an
// upper-case name, expanded, compressed, IPv4-compatible and hex
// IPv4-mapped IPv6) never reach a loopback server, its port allowed,
// without InsecureAllowLoopback: the dial guard checks the address
// dialled, however the URL wrote it. (The numeric IPv4 forms that
// getaddrinfo accepts, 2130706433, 0x7f.1, 0177.0.0.1, 127.1, and names
// with a trailing dot need a DNS query with Go's resolver, so they are
// not here; they end at the same dial guard when they resolve.)
func TestResolveLoopbackSpellings(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	r := mustResolver(t, ResolverConfig{RootCAs: s.pool, AllowedPorts: []uint16{s.port()}, Timeout: 2 * time.Second})
	port := strconv.Itoa(int(s.port()))
	for _, host := range []string{
		"LOCALHOST", "LocalHost",
		"[0:0:0:0:0:0:0:1]", "[0::1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
	} {
		t.Run(host, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), "https://"+host+":"+port+"/client.json")
			wantErrs(t, err, errForbiddenAddress)
		})
	}
	if n := s.conns.n.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback server, want 0", n)
	}
}
