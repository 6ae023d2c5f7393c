package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// unixHost is the Host of requests to a unix-socket upstream: a loopback
// name, which SDKs with DNS-rebinding protection accept.
const unixHost = "localhost"

// defaultUnixPath is the request path of a unix-socket upstream without
// ?path=.
const defaultUnixPath = "/mcp"

// unixUpstream is a parsed "unix:///path/to/server.sock?path=/mcp".
type unixUpstream struct {
	socket string   // absolute, cleaned socket path
	target *url.URL // the HTTP URL requests go to: http://localhost/<path>
}

// parseUnixUpstream parses an upstream URL of the unix scheme: an
// absolute socket path, and the HTTP request path in the one query
// parameter "path" (default /mcp).
func parseUnixUpstream(u *url.URL) (*unixUpstream, error) {
	if u.Host != "" || u.Opaque != "" || u.User != nil || u.Fragment != "" || !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("want unix:///absolute/path/to/server.sock, optionally with ?path=/mcp")
	}
	if path.Clean(u.Path) != u.Path || strings.HasSuffix(u.Path, "/") {
		return nil, fmt.Errorf("socket path %q: want a clean absolute path", u.Path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	p := defaultUnixPath
	for k, v := range q {
		if k != "path" || len(v) != 1 || !strings.HasPrefix(v[0], "/") || strings.ContainsAny(v[0], "?#") {
			return nil, fmt.Errorf("query: want only path=/<request path>")
		}
		p = v[0]
	}
	t, err := url.Parse("http://" + unixHost + p)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	}
	return &unixUpstream{socket: u.Path, target: t}, nil
}

// transport returns the transport of a unix-socket upstream: the
// proxy's own settings, every connection to the socket.
func (uu *unixUpstream) transport(t Timeouts) *http.Transport {
	tr := newTransport(t)
	tr.ForceAttemptHTTP2 = false
	d := &net.Dialer{Timeout: t.Dial}
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", uu.socket)
	}
	return tr
}

// dial checks that the socket accepts a connection (/readyz).
func (uu *unixUpstream) dial(ctx context.Context, timeout time.Duration) error {
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "unix", uu.socket)
	if err == nil {
		_ = c.Close()
	}
	return err
}
