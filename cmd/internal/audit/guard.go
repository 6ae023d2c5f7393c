package audit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// Requests that were not sent, and why. A check failing on such evidence
// is skipped instead (see record).
var (
	// errBudget: the run has sent Config.MaxRequests requests.
	errBudget = errors.New("audit: request budget exhausted")
	// errHostCap: the run has sent Config.MaxRequestsPerHost requests to
	// this host (not the endpoint's).
	errHostCap = errors.New("audit: per-host request cap reached")
	// errDeadline: Config.Deadline passed before or while the request
	// was sent.
	errDeadline = errors.New("audit: run deadline reached")
)

// notSent says how the evidence of a request that was not sent (or was
// cut by the run's deadline) ends, and the detail of a check skipped for
// it.
type notSent struct {
	err          error
	note, detail string
}

// notSentReasons are every reason a request is not sent.
var notSentReasons = []notSent{
	{errBudget, "not sent (request budget exhausted)", "request budget exhausted (-max-requests)"},
	{errHostCap, "not sent (per-host request cap reached)", "per-host request cap reached (-max-requests-per-host)"},
	{errDeadline, "cut by the run's deadline (-deadline)", "the run's deadline passed (-deadline)"},
}

// localClasses are the non-public address ranges an audited endpoint may
// live in. When the endpoint resolves into one of them, the URLs its
// server hands the audit may point into the same range (a staging AS on
// the same private network, or a test AS on loopback); never into
// another one.
var localClasses = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

// endpointPrefixes returns the address ranges opened to handed URLs for
// an endpoint at addrs: the local class of each address, or the address
// itself when it is non-public and in none (link-local, for instance).
// Public addresses need nothing, and one public address among them opens
// nothing at all: a name whose DNS answers with a public and a loopback
// address reaches the public server when the loopback dial is refused,
// and that server must not be able to hand out loopback URLs.
func endpointPrefixes(addrs []netip.Addr) []netip.Prefix {
	public := ssrf.New(ssrf.WithAnyPort())
	var out []netip.Prefix
	for _, a := range addrs {
		a = a.Unmap()
		i := slices.IndexFunc(localClasses, func(p netip.Prefix) bool { return p.Contains(a) })
		switch {
		case i >= 0:
			if !slices.Contains(out, localClasses[i]) {
				out = append(out, localClasses[i])
			}
		case public.SafeAddr(a) != nil:
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		default:
			return nil
		}
	}
	return out
}

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// systemLookup is the resolver of a run: net.DefaultResolver.
func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// resolveEndpoint returns the addresses of the endpoint's host: the
// literal, or what lookup says (bounded by timeout). Nil when it does not
// resolve: handed URLs are then held to public addresses.
func resolveEndpoint(ctx context.Context, lookup lookupFunc, host string, timeout time.Duration) []netip.Addr {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil
	}
	return addrs
}

// pinnedDialer dials the endpoint's host only at the addresses that
// resolveEndpoint found, which decided what handed URLs may reach: a name
// that answers with a public address at that check and with loopback (or
// the other way round) at the next lookup cannot lead the audit's own
// requests elsewhere. Other hosts, and the endpoint's when it did not
// resolve then (handed URLs are held to public addresses), are dialled as
// they resolve.
type pinnedDialer struct {
	d    net.Dialer
	host string       // the endpoint's host name, lower case; "" before Run
	pins []netip.Addr // its addresses
}

// DialContext is the plain transport's dial.
func (p *pinnedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil || p.host == "" || !strings.EqualFold(host, p.host) {
		return p.d.DialContext(ctx, network, address)
	}
	var first error
	for _, a := range p.pins {
		c, err := p.d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// newGuardedClient is the client of every URL the audited server hands
// the audit (resource_metadata, authorization servers, jwks_uri, a
// token_endpoint): the project's SSRF dial guard, opened only to the
// address class of the endpoint, on ports 80 and 443 and the endpoint's
// port for public addresses.
func newGuardedClient(endpoint *url.URL, addrs []netip.Addr, cfg Config) *http.Client {
	ports := []uint16{80, 443}
	if p, err := strconv.ParseUint(endpoint.Port(), 10, 16); err == nil && !slices.Contains(ports, uint16(p)) {
		ports = append(ports, uint16(p))
	}
	c := fetch.NewClient(fetch.ClientConfig{
		Timeout:        cfg.Timeout,
		GuardAddresses: true,
		AllowedPorts:   ports,
		AllowPrefixes:  endpointPrefixes(addrs),
		RootCAs:        cfg.RootCAs,
	})
	c.CheckRedirect = sameOriginGET
	return c
}

// origin is scheme://host:port of u, lower case, with the default port
// made explicit, so that two spellings of one origin compare equal.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// isLoopbackURL reports an http(s) URL whose host is a loopback literal
// or "localhost".
func isLoopbackURL(u *url.URL) bool { return fetch.IsLoopbackHost(u.Hostname()) }

// trusted reports whether u is on an origin the operator named: the
// endpoint's, -issuer's or -token-url's. Those are fetched with the
// plain client; every other URL goes through the guarded one, and its
// answers are never quoted.
func (a *Auditor) trusted(u *url.URL) bool {
	return slices.Contains(a.trustedOrigins, origin(u))
}

// ownAnswer reports whether x came from the audited endpoint's origin (or
// the upstream behind its proxy, which the operator named too), whose
// answers the report may quote.
func (a *Auditor) ownAnswer(x *exchange) bool {
	if x.url == nil {
		return false
	}
	o := origin(x.url)
	return o == origin(a.endpoint) || (a.upstream != nil && o == origin(a.upstream))
}

// hostKey names the host of u for the per-host cap.
func hostKey(u *url.URL) string { return strings.ToLower(u.Hostname()) }
