package middleware

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/mcpguard/mcpguard/internal/httptoken"
)

var errOriginRepeated = fmt.Errorf("%w: several Origin headers", errOrigin)

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
		return p, fmt.Errorf("%w: Metadata.Resource: unparsable", errConfig)
	}
	p.allowed[canonOrigin(u.Scheme, u.Host)] = struct{}{}
	for i, o := range list {
		if o == "*" {
			if len(list) != 1 {
				return p, fmt.Errorf("%w: AllowedOrigins: \"*\" must be the only entry", errConfig)
			}
			p.any = true
			continue
		}
		c, ok := parseOrigin(o)
		if !ok {
			return p, fmt.Errorf("%w: AllowedOrigins[%d] is not a scheme://host[:port] origin", errConfig, i)
		}
		p.allowed[c] = struct{}{}
	}
	return p, nil
}

// check applies the policy to r. A request without Origin passes (non-browser
// clients send none).
func (p *originPolicy) check(r *http.Request) error { return p.checkValues(r.Header["Origin"]) }

// checkValues is check given the request's Origin header values.
func (p *originPolicy) checkValues(vals []string) error {
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
	return errOrigin
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

// CORS (the Fetch standard's protocol) for the origins the policy allows,
// so that a browser-based MCP client served from one of them (MCP
// Inspector connecting directly, a web app) can send its requests and
// read the answers, the 401's WWW-Authenticate included. Credentials mode
// is never enabled: tokens travel in Authorization, not in cookies.
const (
	corsAllowMethods  = "GET, POST, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, DPoP, Last-Event-ID, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name"
	corsExposeHeaders = "WWW-Authenticate, Mcp-Session-Id, DPoP-Nonce, Retry-After"
	corsMaxAge        = "600"
	// The 2026-07-28 transport's x-mcp-header parameters travel as
	// Mcp-Param-{Name} headers, one per annotated tool argument: a
	// preflight asking for such headers gets them allowed, up to
	// corsMaxParams names of at most corsMaxParamLen bytes each.
	corsParamPrefix = "mcp-param-"
	corsMaxParams   = 32
	corsMaxParamLen = 128
)

// cors adds the CORS answer headers when r has one Origin, a serialized
// origin ("null" never is) that the policy allows, and reports whether r
// is a CORS preflight (OPTIONS with Access-Control-Request-Method), which
// it has then answered: 204 with the methods and request headers of MCP's
// Streamable HTTP transport. A preflight from another origin is not
// answered here: it gets the 403 of any request from that origin.
func (p *originPolicy) cors(w http.ResponseWriter, r *http.Request) bool {
	vals := r.Header["Origin"]
	if len(vals) != 1 {
		return false
	}
	if _, ok := parseOrigin(vals[0]); !ok || p.check(r) != nil {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", vals[0])
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	if r.Method != http.MethodOptions || len(r.Header["Access-Control-Request-Method"]) == 0 {
		return false
	}
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders+paramHeaders(r.Header["Access-Control-Request-Headers"]))
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("Cache-Control", "no-store")
	closeUnread(w, r) // a preflight's body is never read
	w.WriteHeader(http.StatusNoContent)
	return true
}

// paramHeaders returns, as a suffix of the Allow-Headers list, the
// Mcp-Param-{Name} field names among a preflight's
// Access-Control-Request-Headers (a comma-separated list of field names,
// Fetch standard §3.2.2), canonicalized; names that are not RFC 9110
// tokens, and any beyond the caps, are left out (the browser then refuses
// its request).
func paramHeaders(lines []string) string {
	var b strings.Builder
	n := 0
	for _, line := range lines {
		for name := range strings.SplitSeq(line, ",") {
			name = strings.TrimSpace(name)
			if len(name) <= len(corsParamPrefix) || len(name) > corsMaxParamLen ||
				!strings.EqualFold(name[:len(corsParamPrefix)], corsParamPrefix) || !httptoken.Valid(name) {
				continue
			}
			if n++; n > corsMaxParams {
				return b.String()
			}
			b.WriteString(", ")
			b.WriteString(textproto.CanonicalMIMEHeaderKey(name))
		}
	}
	return b.String()
}
