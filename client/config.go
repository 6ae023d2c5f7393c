package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/prm"
)

// Reasons reported in [AuthorizeRequest.Reason].
const (
	// reasonUnauthorized: a 401 with no error code or error="invalid_token"
	// (RFC 6750 §3.1): no token, or the token was rejected.
	reasonUnauthorized = "unauthorized"
	// reasonInsufficientScope: a 403 with error="insufficient_scope"
	// (RFC 6750 §3.1): step-up authorization.
	reasonInsufficientScope = "insufficient_scope"
)

const (
	defaultMaxRetries  = 2
	hardMaxRetries     = 5
	defaultMetadataTTL = time.Hour
)

// Authorizer obtains new tokens when the MCP server asks for them. It is
// supplied by the application: typically it runs an OAuth 2.1 authorization
// code flow with PKCE against one of ResourceMetadata.AuthorizationServers,
// sending RFC 8707 resource=Resource and scope=Scopes, possibly by opening a
// browser; [ClientCredentials] is one for machine clients. The transport
// calls at most one Authorize at a time.
//
// Client registrations belong to one authorization server: an Authorizer
// must not present a client_id or secret obtained from one server to
// another (MCP 2026-07-28, SEP-2352); key them by issuer, and register
// again when req.AuthorizationServersChanged or the issuer is new.
//
// Authorize must obtain a token for exactly req.Scopes, which is already
// the union of the previously requested, granted and challenged scopes
// (MCP 2026-07-28 §Step-Up Authorization Flow, SEP-2350). It must not try
// to satisfy a step-up by refreshing the old token: a refresh_token grant
// cannot widen scope (RFC 6749 §6; typescript-sdk#2255). It may add
// "offline_access" if the authorization server advertises it (MCP
// 2026-07-28 §Refresh Tokens); the transport never adds it.
type Authorizer interface {
	// Authorize obtains a new token for exactly req.Scopes for the
	// resource req.Resource described by req.ResourceMetadata, and returns
	// a source for it (and its refreshes). ctx is the request's context.
	Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error)
}

// AuthorizerFunc adapts a function to [Authorizer].
type AuthorizerFunc func(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error)

// Authorize calls f(ctx, req).
func (f AuthorizerFunc) Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	return f(ctx, req)
}

var _ Authorizer = AuthorizerFunc(nil)

// AuthorizeRequest describes one re-authorization.
type AuthorizeRequest struct {
	// Resource is the RFC 8707 resource indicator to send in the
	// authorization and token requests: ResourceMetadata.Resource, the
	// metadata's "resource" value exactly (MCP §Resource Parameter
	// Implementation: the canonical URI; RFC 9728 §3.3 checked it). It is
	// [Config.Resource], or the resource's origin when the metadata came
	// from the root well-known URL.
	Resource string
	// ResourceMetadata is the RFC 9728 metadata of the resource, fetched
	// and checked (§3.3) by the transport. Its Resource equals
	// [Config.Resource], or the resource's origin when it came from the
	// root well-known URL. It is a copy; the Authorizer may keep it.
	ResourceMetadata *prm.Metadata
	// AuthorizationServersChanged reports that ResourceMetadata lists
	// other authorization servers than the metadata of the previous
	// authorization did. A 401 for a token the resource had accepted
	// makes the transport read the metadata again, bypassing its cache,
	// so a resource that moved to another authorization server is seen at
	// once (MCP 2026-07-28, SEP-2352). The Authorizer must then register
	// with the new server rather than reuse the old server's client
	// credentials, which "MUST NOT" be assumed portable.
	AuthorizationServersChanged bool
	// Scopes is the scope set to request, in stable order: the previously
	// requested and granted scopes first, then the new ones. It may be
	// empty (a 401 without scope and metadata without scopes_supported);
	// MCP then says to omit the scope parameter.
	Scopes []string
	// Challenge is the Bearer challenge that triggered the request (the
	// DPoP one, when Config.DPoP is set and the server sent one).
	Challenge challenge.Challenge
	// Reason is "unauthorized" (a 401) or "insufficient_scope" (a 403
	// asking for more scope).
	Reason string
	// DPoP is [Config.DPoP]: when not nil, request a token bound to it
	// (send the token request through DPoP.TokenTransport, RFC 9449 §5).
	DPoP *DPoPKey
}

// Config configures [New]. It is copied; later changes have no effect.
type Config struct {
	// Resource is the canonical URI of the MCP endpoint (MCP §Canonical
	// Server URI; RFC 8707 §2), e.g. "https://mcp.example.com/mcp".
	// Required. It must be https, or http with a loopback host, without
	// userinfo, query or fragment. The token is only ever attached to
	// requests whose URL has the same origin (scheme, host and port, with
	// default ports normalized).
	Resource string
	// TokenSource supplies the initial token. If nil, requests to the
	// resource go out without Authorization until the first 401 makes the
	// transport call Authorizer. It is wrapped in oauth2.ReuseTokenSource.
	TokenSource oauth2.TokenSource
	// Authorizer obtains new tokens on 401 and on 403 insufficient_scope.
	// If nil, such responses are returned to the caller as they are.
	Authorizer Authorizer
	// Base sends the requests. If nil, http.DefaultTransport.
	Base http.RoundTripper
	// MaxRetries bounds the re-authorizations one RoundTrip may perform
	// (MCP: retry "no more than a few times"). Zero means 2; the maximum is
	// 5; other values make New fail.
	MaxRetries int
	// GrantedScopes lists the scopes of the initial token, if known. They
	// seed the step-up union and the loop check.
	GrantedScopes []string
	// HTTPClient fetches the protected-resource metadata from the
	// resource's own origin ([FetchMetadata]). If nil, a client with a 10
	// second timeout, no redirects and no environment proxies. New copies
	// the struct; its Transport must not be this Transport.
	HTTPClient *http.Client
	// CrossOriginHTTPClient fetches a challenge's resource_metadata URL
	// when it is on another origin than Resource. MCP requires clients to
	// use that URL (2025-11-25 and 2026-07-28, §Protected Resource Metadata
	// Discovery: clients "MUST use the resource metadata URL from the
	// parsed WWW-Authenticate headers when present"), and RFC 9728 §5.1
	// allows any origin; but the server names it, so by default the fetch
	// goes through asmeta.NewGuardedClient's SSRF guard: public unicast
	// addresses on port 443 only, no redirects. The document must still
	// name Resource (RFC 9728 §3.3). Pass a client built with
	// asmeta.NewGuardedClient (InsecureAllowLoopback in tests) rather than
	// an unguarded one. New copies the struct.
	CrossOriginHTTPClient *http.Client
	// DenyCrossOriginMetadata refuses a resource_metadata URL on another
	// origin with an [*Error] of reason "cross_origin" instead of fetching
	// it, for deployments that know their resources publish metadata on
	// their own origin. It departs from MCP, which tells clients to use the URL.
	DenyCrossOriginMetadata bool
	// MetadataTTL is how long fetched metadata is reused. Zero means one
	// hour; negative disables caching.
	MetadataTTL time.Duration
	// Now returns the current time, for the metadata cache. If nil,
	// time.Now.
	Now func() time.Time

	// DPoP, if set, sends tokens whose token_type is DPoP with the DPoP
	// scheme and a fresh proof of this key per request (RFC 9449 §7),
	// retries once with the server's nonce on use_dpop_nonce (§9), acts
	// on DPoP challenges as on Bearer ones, and is passed to the
	// Authorizer so that new tokens are bound to it. Nil means Bearer
	// only (dpop.go).
	DPoP *DPoPKey
}

// withDefaults returns a copy of c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	if c.Base == nil {
		c.Base = http.DefaultTransport
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = defaultMaxRetries
	}
	if c.MetadataTTL == 0 {
		c.MetadataTTL = defaultMetadataTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.TokenSource != nil {
		c.TokenSource = oauth2.ReuseTokenSource(nil, c.TokenSource)
	}
	if c.HTTPClient != nil {
		hc := *c.HTTPClient
		c.HTTPClient = &hc
	}
	if c.CrossOriginHTTPClient != nil {
		hc := *c.CrossOriginHTTPClient
		c.CrossOriginHTTPClient = &hc
	} else {
		c.CrossOriginHTTPClient = asmeta.NewGuardedClient(asmeta.GuardConfig{})
	}
	c.GrantedScopes = union(nil, cleanScopes(c.GrantedScopes, true))
	return c
}

// origin is a normalized (scheme, host, port) triple.
type origin struct{ scheme, host, port string }

// originOf returns the normalized origin of u (and of an explicit Host
// override if not empty). ok is false for non-http(s) URLs.
func originOf(scheme, host string) (origin, bool) {
	scheme = strings.ToLower(scheme)
	var port string
	switch scheme {
	case "https":
		port = "443"
	case "http":
		port = "80"
	default:
		return origin{}, false
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil { // no port
		h = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	} else if p != "" {
		port = p
	}
	if h == "" {
		return origin{}, false
	}
	return origin{scheme, strings.ToLower(h), port}, true
}

// parseResource checks Config.Resource and returns its origin.
func parseResource(s string) (origin, error) {
	if s == "" {
		return origin{}, fmt.Errorf("%w: Resource is required", errInvalidConfig)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return origin{}, fmt.Errorf("%w: Resource must be an absolute URL", errInvalidConfig)
	}
	o, ok := originOf(u.Scheme, u.Host)
	switch {
	case !ok:
		return origin{}, fmt.Errorf("%w: Resource must be an http(s) URL with a host", errInvalidConfig)
	case o.scheme == "http" && !isLoopback(o.host):
		return origin{}, fmt.Errorf("%w: Resource must use https (http only for loopback hosts)", errInvalidConfig)
	case u.User != nil:
		return origin{}, fmt.Errorf("%w: Resource must not contain userinfo", errInvalidConfig)
	case u.RawQuery != "" || u.ForceQuery:
		return origin{}, fmt.Errorf("%w: Resource must not contain a query", errInvalidConfig)
	case strings.Contains(s, "#"):
		return origin{}, fmt.Errorf("%w: Resource must not contain a fragment", errInvalidConfig)
	}
	return o, nil
}

// isLoopback reports whether host is "localhost" or a loopback IP.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkEndpoint requires an absolute https URL, or http with a loopback
// host, for URLs that receive credentials.
func checkEndpoint(name, s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.User != nil {
		return fmt.Errorf("%w: %s must be an absolute URL", errInvalidConfig, name)
	}
	o, ok := originOf(u.Scheme, u.Host)
	if !ok || (o.scheme == "http" && !isLoopback(o.host)) {
		return fmt.Errorf("%w: %s must use https (http only for loopback hosts)", errInvalidConfig, name)
	}
	return nil
}
