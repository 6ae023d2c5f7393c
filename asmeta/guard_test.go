package asmeta

import (
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// TestDiscoverNilClientIsGuarded: without a client, Discover refuses a
// loopback issuer at the dial (nothing reaches the server) and stops at the
// first URL; the guarded client with loopback explicitly allowed reaches it.
func TestDiscoverNilClientIsGuarded(t *testing.T) {
	f := newFakeAS(t)
	f.set("/.well-known/oauth-authorization-server/t", doc{body: metaJSON(f.srv.URL+"/t", "")})
	_, err := Discover(t.Context(), nil, f.srv.URL+"/t")
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, fetch.ErrForbiddenAddress) {
		t.Fatalf("Discover(nil client, loopback) = %v, want %v and %v", err, ErrNotFound, fetch.ErrForbiddenAddress)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("requests reaching the loopback server = %d, want 0", n)
	}
	m, err := Discover(t.Context(), NewGuardedClient(GuardConfig{InsecureAllowLoopback: true}), f.srv.URL+"/t")
	if err != nil || m.Issuer != f.srv.URL+"/t" {
		t.Fatalf("Discover(loopback allowed) = %v, %v", m, err)
	}
}

func TestNewGuardedClientRefusesPrivateAddresses(t *testing.T) {
	c := NewGuardedClient(GuardConfig{InsecureAllowLoopback: true, AllowedPorts: []uint16{443, 80}})
	for _, u := range []string{
		"https://10.0.0.1/.well-known/oauth-authorization-server",
		"https://169.254.169.254/.well-known/oauth-authorization-server",
		"https://[fd00::1]/.well-known/oauth-authorization-server",
	} {
		_, err := fetch.Get(t.Context(), c, u, 1<<10)
		if !errors.Is(err, fetch.ErrForbiddenAddress) {
			t.Errorf("GET %s = %v, want %v", u, err, fetch.ErrForbiddenAddress)
		}
	}
}
