package prm

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// wellKnownPath is the RFC 9728 §3 well-known URI path for protected-resource
// metadata, registered in RFC 9728 §8.3.
const wellKnownPath = "/.well-known/oauth-protected-resource"

// MetadataURL returns the RFC 9728 §3.1 metadata URL of a resource
// identifier: the well-known path "/.well-known/oauth-protected-resource"
// is inserted between the host and the path, after removing a terminating
// slash that directly follows the host. Port, path
// (with its original escaping and any trailing slash) and query are kept;
// scheme and host are lower-cased:
//
//	https://example.com/public/mcp -> https://example.com/.well-known/oauth-protected-resource/public/mcp
//	https://example.com/           -> https://example.com/.well-known/oauth-protected-resource
//	https://example.com:8443/mcp?t=1 -> https://example.com:8443/.well-known/oauth-protected-resource/mcp?t=1
//
// The root-form URL, the MCP fallback probe after the path-inserted one, is
// the MetadataURL of the resource's origin (scheme://host[:port]); a client
// probing it must expect the document's resource to be that origin
// (RFC 9728 §3.3), not the full resource.
//
// The resource must be an absolute http or https URL with a host and without
// userinfo or fragment; otherwise the error wraps [ErrInvalidResource].
// MetadataURL does not apply the stricter rules of [Metadata.Validate] (it
// accepts a query and any host), so that clients can compute the URL for any
// resource; the client fetch then enforces https-or-loopback.
func MetadataURL(resource string) (string, error) {
	u, err := parseResource(resource)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(origin(u))
	b.WriteString(wellKnownPath)
	if p := u.EscapedPath(); p != "" && p != "/" {
		b.WriteString(p)
	}
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	return b.String(), nil
}

// Paths returns the two URL paths at which [Handler] serves the metadata of
// resource, for mounting on a router: the RFC 9728 §3.1 path-inserted path
// and the root path "/.well-known/oauth-protected-resource". They are equal
// when the resource has no path (or just "/"); mount once in that case.
//
// The resource must satisfy the resource rules of [Metadata.Validate], and
// its path must also be usable verbatim as an http.ServeMux or gorilla/mux
// pattern: only RFC 3986 unreserved and sub-delim characters, ":", "@" and
// "/", with no percent-encoding and no empty segment ("//"). So the returned
// paths are the same escaped or decoded. Otherwise the error wraps
// [ErrInvalidResource].
func Paths(resource string) (pathInserted, root string, err error) {
	if rerr := checkResource(resource); rerr != nil {
		return "", "", fmt.Errorf("%w: %s", ErrInvalidResource, rerr.msg)
	}
	u, _ := url.Parse(resource) // checked above
	p := u.EscapedPath()
	for i := 0; i < len(p); i++ {
		if !isMountable(p[i]) {
			return "", "", fmt.Errorf("%w: path must not need percent-encoding", ErrInvalidResource)
		}
	}
	ins := insertedPath(u)
	// http.ServeMux redirects a path that path.Clean changes (keeping one
	// trailing slash), so such a path could never be served where it is
	// mounted: an empty segment anywhere, trailing "//" included.
	if c := path.Clean(ins); c != ins && c+"/" != ins {
		return "", "", fmt.Errorf("%w: path has an empty segment", ErrInvalidResource)
	}
	return ins, wellKnownPath, nil
}

// isMountable reports whether c is an RFC 3986 pchar other than
// pct-encoded, or "/".
func isMountable(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// insertedPath is wellKnownPath followed by the resource's decoded path,
// without a lone terminating slash.
func insertedPath(u *url.URL) string {
	if u.Path == "" || u.Path == "/" {
		return wellKnownPath
	}
	return wellKnownPath + u.Path
}

// parseResource applies the lenient MetadataURL rules.
func parseResource(resource string) (*url.URL, error) {
	u, err := url.Parse(resource)
	switch {
	case err != nil || u.Opaque != "" || !u.IsAbs():
		return nil, fmt.Errorf("%w: must be an absolute URL", ErrInvalidResource)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("%w: must use https", ErrInvalidResource)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%w: must have a host", ErrInvalidResource)
	case u.User != nil:
		return nil, fmt.Errorf("%w: must not contain userinfo", ErrInvalidResource)
	case strings.Contains(resource, "#"):
		return nil, fmt.Errorf("%w: must not contain a fragment", ErrInvalidResource)
	}
	return u, nil
}

// origin returns scheme://host[:port] in lower case.
func origin(u *url.URL) string {
	return u.Scheme + "://" + strings.ToLower(u.Host)
}
