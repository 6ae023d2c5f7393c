package cimd

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// maxURLBytes caps every URL this package accepts: client_id URLs,
// redirect URIs and the other URL members of client metadata.
const maxURLBytes = 2048

// isClientIDURL reports whether s has the shape of a Client ID Metadata
// Document URL (draft-ietf-oauth-client-id-metadata-document-00 §3): the
// lowercase "https" scheme, a host, a path other than "/", no fragment, no
// userinfo, no "." or ".." path segment (also percent-encoded, e.g. "%2e"),
// no query, only printable ASCII, at most 2048 bytes. Draft-00 says the URL
// SHOULD NOT contain a query; this function refuses one
// ([ResolverConfig.AllowQuery] relaxes that for a [Resolver]).
//
// It also refuses a percent-encoded "/" or "\" and a literal "\" in the
// path, which servers may decode into extra segments, and an IPv6 zone.
// isClientIDURL does no I/O.
func isClientIDURL(s string) bool {
	return checkClientIDURL(s, false) == nil
}

// checkClientIDURL returns nil or an error wrapping errNotClientIDURL.
func checkClientIDURL(s string, allowQuery bool) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", errNotClientIDURL, why) }
	if len(s) > maxURLBytes {
		return bad("too long")
	}
	const prefix = "https://"
	if !strings.HasPrefix(s, prefix) {
		return bad("scheme must be https")
	}
	if !printableASCII(s) {
		return bad("characters outside printable ascii")
	}
	if strings.Contains(s, "#") {
		return bad("fragment not allowed")
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("unparsable")
	}
	authority, rest := splitAuthority(s[len(prefix):])
	switch {
	case u.User != nil || strings.Contains(authority, "@"):
		return bad("userinfo not allowed")
	case u.Hostname() == "":
		return bad("no host")
	case strings.Contains(authority, "%"):
		return bad("ipv6 zone not allowed")
	case !validPort(u.Port(), strings.HasSuffix(authority, ":")):
		return bad("invalid port")
	}
	path, _, hasQuery := strings.Cut(rest, "?")
	if hasQuery && !allowQuery {
		return bad("query not allowed")
	}
	if path == "" || path == "/" {
		return bad("path required")
	}
	if strings.Contains(path, `\`) {
		return bad("backslash in path")
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return bad("invalid percent-encoding")
		}
		if dec == "." || dec == ".." {
			return bad("dot segment not allowed")
		}
		if strings.ContainsAny(dec, `/\`) {
			return bad("encoded slash in path")
		}
	}
	return nil
}

// splitAuthority splits what follows "scheme://" into the authority and the
// rest (path, query, fragment).
func splitAuthority(s string) (authority, rest string) {
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// validPort reports whether p is empty (and no bare ":" was written) or a
// decimal port in 1..65535.
func validPort(p string, bareColon bool) bool {
	if p == "" {
		return !bareColon
	}
	if len(p) > 5 {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] >= '0' && p[0] <= '9'
}

// printableASCII reports whether s holds only bytes 0x21..0x7e.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// checkHTTPSURL checks an informational URL member (client_uri, logo_uri,
// tos_uri, policy_uri, jwks_uri): absolute https with a host, no userinfo,
// no fragment, printable ASCII, at most 2048 bytes. Such URLs are never
// fetched by this package.
func checkHTTPSURL(member, s string) error {
	if len(s) > maxURLBytes || !printableASCII(s) {
		return fmt.Errorf("%w: %s: too long or not printable ascii", errInvalidClientMetadata, member)
	}
	if u, err := fetch.CheckURL(s, false); err != nil || u.Hostname() == "" {
		return fmt.Errorf("%w: %s: must be an https url with a host, without userinfo or fragment", errInvalidClientMetadata, member)
	}
	return nil
}
