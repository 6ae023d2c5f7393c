package fetch

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// RedirectPolicy says which redirects a client follows.
type RedirectPolicy int

const (
	// NoRedirects returns the 3xx response itself, which [Get] then
	// refuses with a [StatusError]. This is the default.
	NoRedirects RedirectPolicy = iota
	// SameOrigin follows at most 3 redirects whose target has the same
	// scheme, host and port as the original request.
	SameOrigin
)

// DefaultTimeout bounds a whole request, body read included.
const DefaultTimeout = 10 * time.Second

// ClientConfig configures [NewClient]. The zero value is a safe client for
// fetching from a trusted operator-configured URL: 10 s total timeout, no
// proxies, no redirects, TLS 1.2+, system roots.
type ClientConfig struct {
	// Timeout bounds each request including reading the body. Zero means
	// [DefaultTimeout].
	Timeout time.Duration
	// GuardAddresses installs the SSRF dial guard: the IP address actually
	// dialled must be a public unicast address (IANA special-purpose
	// registries: loopback, private, link-local, CGN, multicast,
	// documentation, cloud metadata, IPv4-mapped, NAT64, 6to4, … are
	// refused), on one of AllowedPorts. Use it whenever the URL comes from
	// an untrusted party.
	GuardAddresses bool
	// AllowedPorts are the destination ports the guard permits. Nil means
	// 443 only. Ignored without GuardAddresses.
	AllowedPorts []uint16
	// InsecureAllowLoopback lets the guard dial loopback addresses
	// (127.0.0.0/8, ::1) on any port. DANGEROUS outside tests and local
	// development: it re-opens SSRF against services on the host itself.
	InsecureAllowLoopback bool
	// AllowPrefixes are further destinations the guard permits, on any
	// port: for a caller that has an operator's word for a non-public
	// network (the audit command allows the address class of the endpoint
	// it was told to audit). The cloud metadata addresses (169.254.169.254,
	// 169.254.170.2, 169.254.170.23, fd00:ec2::254, fd00:ec2::23,
	// 100.100.100.200) stay refused unless a prefix is exactly that one
	// address. Nil means none. Ignored without GuardAddresses.
	AllowPrefixes []netip.Prefix
	// RootCAs, when non-nil, replaces the system roots (for test CAs).
	RootCAs *x509.CertPool
	// Redirects is the redirect policy. Zero means [NoRedirects].
	Redirects RedirectPolicy
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.AllowedPorts == nil {
		c.AllowedPorts = []uint16{443}
	}
	return c
}

// NewClient returns an *http.Client built from cfg. It never uses
// environment proxies.
func NewClient(cfg ClientConfig) *http.Client {
	cfg = cfg.withDefaults()
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if cfg.GuardAddresses {
		dialer.Control = guard(cfg)
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  cfg.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: 32 << 10,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs},
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       cfg.Timeout,
		CheckRedirect: redirectFunc(cfg.Redirects),
	}
}

func guard(cfg ClientConfig) func(network, address string, c syscall.RawConn) error {
	opts := []ssrf.Option{ssrf.WithPorts(cfg.AllowedPorts...)}
	g := ssrf.New(opts...)
	var loop *ssrf.Guardian
	if cfg.InsecureAllowLoopback {
		loop = ssrf.New(ssrf.WithAnyPort(),
			ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.0/8")),
			ssrf.WithAllowedV6Prefixes(netip.MustParsePrefix("::1/128")))
	}
	allow := slices.Clone(cfg.AllowPrefixes)
	return func(network, address string, c syscall.RawConn) error {
		if len(allow) > 0 && (network == "tcp" || network == "tcp4" || network == "tcp6") {
			if ap, err := netip.ParseAddrPort(address); err == nil && allowedPrefix(allow, ap.Addr()) {
				return nil
			}
		}
		if loop != nil {
			if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr().Unmap().IsLoopback() {
				if err := loop.Safe(network, address, c); err == nil {
					return nil
				}
			}
		}
		if err := g.Safe(network, address, c); err != nil {
			return fmt.Errorf("%w: %w", ErrForbiddenAddress, err)
		}
		return nil
	}
}

// cloudMetadata are the instance metadata addresses of the large clouds
// (AWS, GCP and Azure share 169.254.169.254; AWS ECS and EKS, AWS IPv6,
// Alibaba), which AllowPrefixes never opens by accident.
var cloudMetadata = [...]netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
}

// allowedPrefix reports whether addr (unmapped) is in one of prefixes and
// is no cloud metadata address, unless a prefix is exactly that address.
func allowedPrefix(prefixes []netip.Prefix, addr netip.Addr) bool {
	addr = addr.Unmap()
	in := false
	for _, p := range prefixes {
		if p.Contains(addr) {
			if p.IsSingleIP() {
				return true
			}
			in = true
		}
	}
	return in && !slices.Contains(cloudMetadata[:], addr)
}

func redirectFunc(p RedirectPolicy) func(*http.Request, []*http.Request) error {
	if p != SameOrigin {
		return func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 3 {
			return http.ErrUseLastResponse
		}
		o := via[0].URL
		if req.URL.Scheme != o.Scheme || req.URL.Host != o.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}
}

// transportErr classifies an error from http.Client.Do.
func transportErr(err error) error {
	if errors.Is(err, ErrForbiddenAddress) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTransport, err)
}
