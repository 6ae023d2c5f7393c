package proxy

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/mwdefault"
)

// Describe writes the effective policy of every route, defaults applied,
// in the text "mcpguard proxy -check" prints (for people: not a stable
// format).
func (px *Proxy) Describe(w io.Writer) {
	for _, x := range px.routes {
		r := x.cfg
		list := func(s []string) string {
			if len(s) == 0 {
				return "(none)"
			}
			return strings.Join(s, " ")
		}
		scopeMap := func(m map[string][]string) string {
			if len(m) == 0 {
				return "(none)"
			}
			var b strings.Builder
			for _, k := range slices.Sorted(maps.Keys(m)) {
				fmt.Fprintf(&b, "\n      %s: %s", k, list(m[k]))
			}
			return b.String()
		}
		fmt.Fprintf(w, "route %s\n", r.Resource)
		if r.Stdio.enabled() {
			per := "session"
			if r.Stdio.PerUser {
				per = "user"
			}
			fmt.Fprintf(w, "  upstream:          stdio %q, a process per %s (dir %q)\n", r.Stdio.Command, per, r.Stdio.Dir)
		} else {
			fmt.Fprintf(w, "  upstream:          %s\n", r.Upstream)
		}
		switch id := x.identity.(type) {
		case *assertionIdentity:
			fmt.Fprintf(w, "  identity:          assertion (iss %s, aud %s, ttl %s, header %s; JWK Set at %s)\n",
				px.cfg.Assertion.Issuer, id.a.audience, id.a.ttl, id.header, px.cfg.Assertion.JWKSPath)
		case *exchangeIdentity:
			fmt.Fprintf(w, "  identity:          exchange (RFC 8693 at %s as client %s, audience %s, header %s)\n",
				cmp.Or(id.cfg.TokenEndpoint, "the token_endpoint discovered from the token's issuer"), id.cfg.ClientID, id.audience, id.header)
		case stdioIdentity:
			fmt.Fprintf(w, "  identity:          stdio (MCPGUARD_USER_ISSUER, _SUBJECT, _TENANT, _CLIENT in each child's environment)\n")
		default:
			fmt.Fprintf(w, "  identity:          headers (plain X-Mcpguard-* headers; loopback or unix-socket upstream only)\n")
		}
		fmt.Fprintf(w, "  issuers:           %s\n", list(r.Issuers))
		for _, iss := range r.Issuers {
			is := px.cfg.Issuers[iss]
			keys := "discovered (RFC 8414, OpenID Connect)"
			switch {
			case is.OpaqueOnly:
				keys = "none (opaque_only: its JWTs are refused)"
			case is.JWKSURL != "":
				keys = "from " + is.JWKSURL
			}
			fmt.Fprintf(w, "    %s: keys %s", iss, keys)
			if in := is.Introspection; in.enabled() {
				ep := in.Endpoint
				if ep == "" {
					ep = "discovered"
				}
				m, _ := authMethod(in.AuthMethod)
				fmt.Fprintf(w, "; other tokens introspected (endpoint %s, client %s, %s)", ep, in.ClientID, m)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  base scopes:       %s\n", list(r.Scopes))
		fmt.Fprintf(w, "  method scopes:     %s\n", scopeMap(r.Operations.Methods))
		fmt.Fprintf(w, "  tool scopes:       %s\n", scopeMap(r.Operations.Tools))
		fmt.Fprintf(w, "  prompt scopes:     %s\n", scopeMap(r.Operations.Prompts))
		if len(r.Operations.Resources) == 0 {
			fmt.Fprintf(w, "  resource scopes:   (none)\n")
		} else {
			fmt.Fprintf(w, "  resource scopes:\n")
			for _, rr := range r.Operations.Resources {
				kind := "exact"
				if rr.Prefix {
					kind = "prefix"
				}
				fmt.Fprintf(w, "      %s (%s): %s\n", rr.URI, kind, list(rr.Scopes))
			}
		}
		if r.Operations.DenyUnlisted {
			fmt.Fprintf(w, "  unlisted:          refused (deny_unlisted: terminal 403)\n")
		} else {
			fmt.Fprintf(w, "  unlisted:          allowed with the base and method scopes\n")
		}
		pub := r.Operations.Public
		fmt.Fprintf(w, "  public (no token): methods %s; tools %s; prompts %s; resources %s\n",
			list(pub.Methods), list(pub.Tools), list(pub.Prompts), list(pub.Resources))
		dp := r.DPoP
		if dp == "" {
			dp = "off"
		}
		if dp != "off" && len(r.DPoPProof.NonceSecret) > 0 {
			dp += ", server nonces required"
		}
		fmt.Fprintf(w, "  dpop:              %s\n", dp)
		fmt.Fprintf(w, "  allowed origins:   %s\n", list(append([]string{"(the resource's own)"}, r.AllowedOrigins...)))
		limit, window := r.StepUp.Limit, r.StepUp.Window
		if limit == 0 {
			limit = mwdefault.StepUpLimit
		}
		if window == 0 {
			window = mwdefault.StepUpWindow
		}
		if limit < 0 {
			fmt.Fprintf(w, "  step-up bound:     disabled\n")
		} else {
			fmt.Fprintf(w, "  step-up bound:     %d challenges per principal and scope set per %s\n", limit, window)
		}
		body := r.MaxBodyBytes
		if body == 0 {
			body = mwdefault.MaxBodyBytes
		}
		fmt.Fprintf(w, "  max body:          %d bytes\n", body)
		inserted, root := x.guard.Middleware().MetadataPaths()
		fmt.Fprintf(w, "  metadata:          %s", inserted)
		if len(px.routes) == 1 && root != inserted {
			fmt.Fprintf(w, " and %s", root)
		}
		fmt.Fprintln(w)
	}
	t := px.cfg.Timeouts
	fmt.Fprintf(w, "timeouts: dial %s, response header %s, idle stream %s, stream write %s; max response header %d bytes\n",
		t.Dial, t.ResponseHeader, t.IdleStream, t.StreamWrite, t.MaxResponseHeaderBytes)
}
