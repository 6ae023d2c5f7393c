package dpop

import (
	"net/url"
	"strings"
)

// normalizeURI returns the form of an http(s) URI that "htu" is compared
// in (RFC 9449 §4.3 check 9): syntax-based normalisation (RFC 3986
// §6.2.2: scheme and host lower-cased, percent-encodings of unreserved
// characters decoded and the others upper-cased, dot segments removed)
// and scheme-based normalisation (§6.2.3: the default port dropped, an
// empty path made "/"). It reports false for anything that is not an
// absolute http or https URI without userinfo, query or fragment: "htu"
// is defined without query and fragment (§4.2), so a proof carrying
// either is refused, not trimmed.
func normalizeURI(s string) (string, bool) {
	if s == "" || strings.ContainsAny(s, "#?") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Hostname() == "" || u.ForceQuery {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	var defPort string
	switch scheme {
	case "https":
		defPort = "443"
	case "http":
		defPort = "80"
	default:
		return "", false
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); p == defPort || (p == "" && strings.HasSuffix(host, ":")) {
		host = strings.TrimSuffix(strings.TrimSuffix(host, p), ":")
	}
	p := normalizePercent(u.EscapedPath())
	if p == "" {
		p = "/"
	}
	ref, err := url.Parse(scheme + "://" + host + p)
	if err != nil {
		return "", false
	}
	// ResolveReference of an absolute reference applies RFC 3986 §5.2.4
	// remove_dot_segments to its path.
	return scheme + "://" + host + ref.ResolveReference(ref).EscapedPath(), true
}

// normalizePercent decodes percent-encoded unreserved characters (RFC 3986
// §2.3) and upper-cases the hex digits of the other percent-encodings.
// p is an escaped path that url.Parse accepted, so every "%" starts a
// valid triplet.
func normalizePercent(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
		i += 2
	}
	return b.String()
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
