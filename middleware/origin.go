package middleware

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

var errOriginRepeated = fmt.Errorf("%w: several Origin headers", ErrOrigin)

// originPolicy is the compiled Origin check.
type originPolicy struct {
	any     bool                // AllowedOrigins == ["*"]
	allowed map[string]struct{} // canonical origins
}

// newOriginPolicy compiles the resource's origin and the allowed list.
func newOriginPolicy(resource string, list []string) (originPolicy, error) {
	p := originPolicy{allowed: map[string]struct{}{}}
	u, err := url.Parse(resource)
	if err != nil {
		return p, fmt.Errorf("%w: Metadata.Resource: unparsable", ErrConfig)
	}
	p.allowed[canonOrigin(u.Scheme, u.Host)] = struct{}{}
	for i, o := range list {
		if o == "*" {
			if len(list) != 1 {
				return p, fmt.Errorf("%w: AllowedOrigins: \"*\" must be the only entry", ErrConfig)
			}
			p.any = true
			continue
		}
		c, ok := parseOrigin(o)
		if !ok {
			return p, fmt.Errorf("%w: AllowedOrigins[%d] is not a scheme://host[:port] origin", ErrConfig, i)
		}
		p.allowed[c] = struct{}{}
	}
	return p, nil
}

// check applies the policy to r. A request without Origin passes (non-browser
// clients send none).
func (p *originPolicy) check(r *http.Request) error {
	vals := r.Header["Origin"]
	if len(vals) == 0 || p.any {
		return nil
	}
	if len(vals) > 1 {
		return errOriginRepeated
	}
	if _, ok := p.allowed[vals[0]]; ok {
		return nil
	}
	if c, ok := parseOrigin(vals[0]); ok {
		if _, ok := p.allowed[c]; ok {
			return nil
		}
	}
	return ErrOrigin
}

// parseOrigin returns the canonical form of an RFC 6454 §7 serialized
// origin: scheme://host[:port] with no path, query, userinfo or fragment.
// "null" and anything else are refused.
func parseOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") {
		return "", false
	}
	return canonOrigin(u.Scheme, u.Host), true
}

// canonOrigin lower-cases scheme and host and drops the scheme's default
// port.
func canonOrigin(scheme, host string) string {
	scheme, host = strings.ToLower(scheme), strings.ToLower(host)
	switch {
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	}
	return scheme + "://" + host
}
