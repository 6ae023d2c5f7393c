package asmeta

import (
	"crypto/x509"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// GuardConfig configures [NewGuardedClient]. The zero value is the strict
// client [Discover] uses when given none.
type GuardConfig struct {
	// Timeout bounds each request, body read included. Zero means 10 s.
	Timeout time.Duration
	// AllowedPorts are the destination ports that may be dialled. Nil
	// means 443 only.
	AllowedPorts []uint16
	// InsecureAllowLoopback also lets the client dial loopback addresses
	// (127.0.0.0/8, ::1) on any port. DANGEROUS outside tests and local
	// development: it re-opens server-side request forgery against
	// services on the host itself.
	InsecureAllowLoopback bool
	// RootCAs, when non-nil, replaces the system roots (for test CAs).
	RootCAs *x509.CertPool
}

// NewGuardedClient returns an HTTP client for fetching URLs that an
// untrusted party chose (an issuer named in protected-resource metadata, a
// resource_metadata URL from a WWW-Authenticate challenge): it dials only
// public unicast addresses (loopback, private, link-local, CGN, multicast,
// documentation, cloud-metadata, IPv4-mapped, NAT64, 6to4, … refused, as
// code.dny.dev/ssrf classifies them), checked on the address actually
// connected to, so DNS rebinding cannot bypass it; only on AllowedPorts;
// follows no redirect; uses no environment proxy; TLS 1.2 or later.
// Refused addresses fail with an error that [Discover] treats as final.
// Callers that build their own client for discovery should start from
// this one.
func NewGuardedClient(cfg GuardConfig) *http.Client {
	return fetch.NewClient(fetch.ClientConfig{
		Timeout:               cfg.Timeout,
		GuardAddresses:        true,
		AllowedPorts:          cfg.AllowedPorts,
		InsecureAllowLoopback: cfg.InsecureAllowLoopback,
		RootCAs:               cfg.RootCAs,
		Redirects:             fetch.NoRedirects,
	})
}
