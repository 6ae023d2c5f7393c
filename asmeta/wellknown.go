package asmeta

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// Well-known URI suffixes (RFC 8414 §3, §7.3; OpenID Connect Discovery 1.0
// §4). MCP defines no application-specific suffix.
const (
	// oAuthSuffix is the RFC 8414 well-known suffix.
	oAuthSuffix = "/.well-known/oauth-authorization-server"
	// openIDSuffix is the OpenID Connect Discovery 1.0 well-known suffix.
	openIDSuffix = "/.well-known/openid-configuration"
)

// WellKnownURLs returns the metadata URLs for issuer in the order the MCP
// authorization specification tells clients to try them (MCP 2025-11-25 and
// 2026-07-28, "Authorization Server Metadata Discovery").
//
// For an issuer with a path, such as https://a.example/tenant1:
//
//	https://a.example/.well-known/oauth-authorization-server/tenant1   (RFC 8414 §3.1, path insertion)
//	https://a.example/.well-known/openid-configuration/tenant1         (OIDC, path insertion)
//	https://a.example/tenant1/.well-known/openid-configuration         (OIDC Discovery 1.0 §4, appending)
//
// For an issuer without a path, such as https://a.example:
//
//	https://a.example/.well-known/oauth-authorization-server
//	https://a.example/.well-known/openid-configuration
//
// One terminating "/" is removed from the issuer's path before the suffix is
// inserted or appended, as RFC 8414 §3.1 and OIDC Discovery §4 require, so
// https://a.example/ yields the two root URLs and https://a.example/tenant1/
// the same three URLs as https://a.example/tenant1. The issuer identifier
// itself is not changed: a document found at these URLs must still name the
// issuer exactly as given, trailing slash included (RFC 8414 §3.3).
//
// The issuer must be an https URL (http is accepted only for loopback hosts,
// for local development) with a host and without query, fragment or
// userinfo (RFC 8414 §2); otherwise the error wraps [ErrInvalidIssuer]. The
// path keeps its original percent-encoding.
func WellKnownURLs(issuer string) ([]string, error) {
	u, err := parseIssuer(issuer)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{origin + oAuthSuffix, origin + openIDSuffix}, nil
	}
	return []string{
		origin + oAuthSuffix + path,
		origin + openIDSuffix + path,
		origin + path + openIDSuffix,
	}, nil
}

// parseIssuer checks an issuer identifier against RFC 8414 §2.
func parseIssuer(issuer string) (*url.URL, error) {
	u, err := fetch.CheckURL(issuer, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidIssuer, err)
	}
	switch {
	case u.Hostname() == "":
		return nil, fmt.Errorf("%w: no host", ErrInvalidIssuer)
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(issuer, "?"):
		return nil, fmt.Errorf("%w: query not allowed", ErrInvalidIssuer)
	}
	return u, nil
}
