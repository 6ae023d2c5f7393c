package cimd

import (
	"fmt"
	"net/url"
	"strings"
)

// Application types (OpenID Connect Dynamic Client Registration 1.0 §2).
const (
	// appTypeWeb: redirect URIs must be https on a host that is not
	// loopback. The default for dynamic registration.
	appTypeWeb = "web"
	// appTypeNative: redirect URIs must be http on a loopback host
	// (RFC 8252 §7.3) or, when allowed, a private-use URI scheme (§7.1).
	appTypeNative = "native"
)

// checkRedirectURI applies the redirect URI registration rules and returns
// nil or an error wrapping errInvalidRedirectURI.
//
//   - at most 2048 bytes of printable ASCII, no fragment, no "*";
//   - a lowercase scheme;
//   - https with a host and no userinfo (not loopback for "web";
//     refused for "native");
//   - http only on the loopback hosts 127.0.0.1, [::1] and localhost,
//     without userinfo (refused for "web");
//   - any other scheme only with allowPrivateUse, and then only a
//     reverse-domain scheme containing a "." (RFC 8252 §7.1), which rules
//     out javascript:, data:, file: and the like (refused for "web").
//
// appType "" applies no type-specific restriction: https, or loopback http.
func checkRedirectURI(raw, appType string, allowPrivateUse bool) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", errInvalidRedirectURI, why) }
	switch {
	case raw == "":
		return bad("empty")
	case len(raw) > maxURLBytes:
		return bad("too long")
	case !printableASCII(raw):
		return bad("characters outside printable ascii")
	case strings.Contains(raw, "#"):
		return bad("fragment not allowed")
	case strings.Contains(raw, "*"):
		return bad("wildcard not allowed")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return bad("not an absolute uri")
	}
	if !strings.HasPrefix(raw, u.Scheme+":") {
		return bad("scheme must be lowercase")
	}
	if u.User != nil {
		return bad("userinfo not allowed")
	}
	if u.Opaque == "" && u.Host != "" {
		authority, _ := splitAuthority(raw[len(u.Scheme)+3:])
		if strings.Contains(authority, "%") || !validPort(u.Port(), strings.HasSuffix(authority, ":")) {
			return bad("invalid host or port")
		}
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" || u.Opaque != "" {
			return bad("https uri needs a host")
		}
		if appType == appTypeNative {
			return bad("native clients must use loopback http or a private-use scheme")
		}
		if appType == appTypeWeb && isLoopbackHost(u.Hostname()) {
			return bad("web clients must not use a loopback host")
		}
		return nil
	case "http":
		if u.Opaque != "" || !isLoopbackHost(u.Hostname()) {
			return bad("http is only allowed on 127.0.0.1, [::1] or localhost")
		}
		if appType == appTypeWeb {
			return bad("web clients must use https")
		}
		return nil
	}
	if !allowPrivateUse {
		return bad("scheme not allowed")
	}
	if !strings.Contains(u.Scheme, ".") {
		return bad("private-use scheme must be a reverse domain name")
	}
	if appType == appTypeWeb {
		return bad("web clients must use https")
	}
	return nil
}

// isLoopbackHost reports whether host (as returned by url.URL.Hostname) is
// one of the loopback hosts redirect URIs may use over http.
func isLoopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || strings.EqualFold(host, "localhost")
}

// RedirectURIAllowed reports whether requested may be used as the
// redirect_uri of an authorization request from a client that registered
// the given redirect URIs.
//
// The comparison is exact, byte for byte (RFC 9700 §4.1.1, draft-00 §4.5),
// with one relaxation from RFC 8252 §7.3: when a registered URI is http on
// the IP literal 127.0.0.1 or [::1], any port is accepted, provided the
// scheme, host, path and query are byte-identical. The registered URI may
// itself omit the port. "localhost" gets no port relaxation: RFC 8252 §8.3
// recommends IP literals, and a name can be resolved elsewhere.
//
// RedirectURIAllowed does no other validation; registered URIs are checked
// when a client is registered or resolved.
func redirectURIAllowed(registered []string, requested string) bool {
	for _, r := range registered {
		if r == requested {
			return true
		}
	}
	host, rest, ok := splitLoopbackIP(requested)
	if !ok {
		return false
	}
	for _, r := range registered {
		if h, rr, ok := splitLoopbackIP(r); ok && h == host && rr == rest {
			return true
		}
	}
	return false
}

// splitLoopbackIP splits an http URI on a loopback IP literal into its
// host and the part after the authority, dropping a valid port. ok is false
// for anything else, including userinfo or a malformed port.
func splitLoopbackIP(s string) (host, rest string, ok bool) {
	const prefix = "http://"
	if !strings.HasPrefix(s, prefix) {
		return "", "", false
	}
	authority, rest := splitAuthority(s[len(prefix):])
	for _, h := range [...]string{"127.0.0.1", "[::1]"} {
		if authority == h {
			return h, rest, true
		}
		if port, found := strings.CutPrefix(authority, h+":"); found && validPort(port, port == "") {
			return h, rest, true
		}
	}
	return "", "", false
}
