package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// hostRule is a route's DNS-rebinding check (issue #23), the one of the
// go-sdk's Streamable HTTP handler (StreamableHTTPOptions
// DisableLocalhostProtection, MCP security best practices §Local MCP
// Server Compromise): a request that arrived on a loopback TCP listener
// must name a loopback host in Host, or the route's own resource host
// (docs/proxy.md, "DNS rebinding: the Host check"). A rebound browser
// page sends its own name; it never reaches the token check or the
// upstream.
type hostRule struct {
	name string     // the resource's host name, when not an IP literal
	ip   netip.Addr // the resource's host, when an IP literal (unzoned, unmapped)
}

// newHostRule returns the rule of a route whose resource is u.
func newHostRule(u *url.URL) hostRule {
	h := u.Hostname()
	if ip, err := netip.ParseAddr(h); err == nil {
		return hostRule{ip: ip.WithZone("").Unmap()}
	}
	return hostRule{name: h}
}

// allows reports whether r passes: it did not arrive on a loopback TCP
// listener (another interface, a unix socket, or no listener at all, as
// for a handler called directly), or its Host's name (port ignored, as
// the go-sdk does) is localhost (any case), a loopback IP literal (127/8,
// ::1, ::ffff:127.0.0.1; IPv6 in brackets), or the resource's host.
func (h hostRule) allows(r *http.Request) bool {
	if !loopbackListener(r.Context()) {
		return true
	}
	name, bracketed, ok := hostName(r.Host)
	if !ok {
		return false
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		if bracketed != ip.Is6() {
			return false // [127.0.0.1], or an IPv6 literal without brackets
		}
		ip = ip.WithZone("").Unmap()
		return ip.IsLoopback() || (h.ip.IsValid() && ip == h.ip)
	}
	if bracketed {
		return false // [localhost]
	}
	return strings.EqualFold(name, "localhost") || (h.name != "" && strings.EqualFold(name, h.name))
}

// hostName returns the name of a Host header value, host or host:port
// (an IPv6 literal in brackets, RFC 9110 §7.2, RFC 3986 §3.2.2), parsed by
// net.SplitHostPort, and whether it was in brackets; ok is false for
// anything else (an empty Host, stray colons or brackets).
func hostName(host string) (name string, bracketed, ok bool) {
	n, _, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the name alone, or a bracketed IPv6 literal.
		if n, _, err = net.SplitHostPort(host + ":0"); err != nil {
			return "", false, false
		}
	}
	return n, strings.HasPrefix(host, "["), n != ""
}

// loopbackListener reports whether the request's connection was accepted
// on a loopback TCP address (net/http's LocalAddrContextKey).
func loopbackListener(ctx context.Context) bool {
	switch a := ctx.Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		ip, ok := netip.AddrFromSlice(a.IP)
		return ok && ip.Unmap().IsLoopback()
	case net.Addr:
		switch a.Network() {
		case "tcp", "tcp4", "tcp6":
			ap, err := netip.ParseAddrPort(a.String())
			return err == nil && ap.Addr().Unmap().IsLoopback()
		}
	}
	return false
}

// errHostNotAllowed: the Host check refused the request (403; the
// decision's internal cause, never sent).
var errHostNotAllowed = errors.New("proxy: Host not allowed on a loopback listener")

// refuseHost answers a request the rule refused: 403 with the proxy's
// JSON-RPC error (id null: the body is never read) and nothing of the
// Host in it. As the middleware's refusals before the body, a request with
// a body gets "Connection: close" (HTTP/1.x) and a read deadline of now,
// so that a trickled body cannot hold the connection.
func refuseHost(w http.ResponseWriter, r *http.Request) {
	refuseUnread(w, r, http.StatusForbidden)
}

// loopbackHostPort reports whether addr is host:port with a port and a
// loopback IP or localhost as its host.
func loopbackHostPort(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
