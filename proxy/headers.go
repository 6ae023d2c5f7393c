package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/httptoken"
)

// maxRequestHeaderBytes (64 KiB, docs/proxy.md) bounds a request's head: the request line and
// every header field line, each counted as sent with its CRLF
// ("Name: value\r\n"), the empty line that ends them included. A request
// with a larger head gets 431 before anything else reads it.
//
// The command's http.Server sets MaxHeaderBytes to the same value:
// net/http then reads at most this much plus its own 4 KiB of slack, and
// the Proxy's exact count refuses what is past the bound.
const maxRequestHeaderBytes = 64 << 10

// headBytes returns the size of r's head as a client sends it, counted
// from the parsed request (net/http keeps neither the raw bytes nor the
// Host and Transfer-Encoding fields in Header), stopping once past
// maxRequestHeaderBytes.
func headBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + 2
	if r.Host != "" && r.Header.Get("Host") == "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	if len(r.TransferEncoding) > 0 && r.Header.Get("Transfer-Encoding") == "" {
		n += len("Transfer-Encoding: ") + len(strings.Join(r.TransferEncoding, ", ")) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
		if n > maxRequestHeaderBytes {
			break
		}
	}
	return n
}

// headerTooLarge answers 431 as net/http does, closing the connection.
func headerTooLarge(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
	_, _ = w.Write([]byte("431 Request Header Fields Too Large"))
}

// allowList returns the canonical names of the request headers a route
// forwards: the protocol's own and its forward_headers (checked at load).
func allowList(extra []string) map[string]bool {
	allow := make(map[string]bool, len(protocolHeaders)+len(extra))
	for _, h := range protocolHeaders {
		allow[h] = true
	}
	for _, h := range extra {
		allow[http.CanonicalHeaderKey(h)] = true
	}
	return allow
}

// checkForwardHeaders checks a route's forward_headers: each an RFC 9110
// field name (a token), without "_", and none of the headers the proxy
// never forwards, strips by prefix, or sets itself (the identity header,
// idHeader, canonical).
func checkForwardHeaders(names []string, idHeader string) error {
	for j, h := range names {
		k := http.CanonicalHeaderKey(h)
		var why string
		switch {
		case !httptoken.Valid(h) || strings.HasSuffix(h, "*"):
			why = "not a header name (prefixes are not supported)"
		case strings.IndexByte(h, '_') >= 0:
			why = "a name with \"_\" is never forwarded"
		case k == idHeader || slices.Contains(alwaysStripped, k):
			why = "never forwarded from a client"
		case slices.ContainsFunc(strippedPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }):
			why = "never forwarded from a client (a forwarding or identity header)"
		}
		if why != "" {
			return fmt.Errorf("forward_headers[%d] %q: %s", j, h, why)
		}
	}
	return nil
}
