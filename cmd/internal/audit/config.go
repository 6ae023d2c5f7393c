package audit

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one request, body included.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBody is the most of a response body read.
	DefaultMaxBody = 256 << 10
	// DefaultInterval is the least time between the starts of two requests.
	DefaultInterval = 50 * time.Millisecond
	// DefaultMaxRequests is the most requests one run sends.
	DefaultMaxRequests = 400
	// DefaultMaxTools is the most tools of tools/list that are called.
	DefaultMaxTools = 32
	// DefaultDeadline bounds a whole run.
	DefaultDeadline = 3 * time.Minute
	// DefaultMaxRequestsPerHost is the most requests one run sends to any
	// one host that the audited server named (Config.MaxRequestsPerHost).
	DefaultMaxRequestsPerHost = 16
)

// Errors of New and Run.
var (
	// ErrConfig: Config is unusable.
	ErrConfig = errors.New("audit: invalid config")
	// ErrUnreachable: the endpoint did not answer at all.
	ErrUnreachable = errors.New("audit: endpoint unreachable")
	// ErrDeadline: Config.Deadline passed before every check ran; the
	// checks not reached are skipped.
	ErrDeadline = errors.New("audit: run deadline reached")
	// ErrCredentials: the client credentials would have gone to a token
	// endpoint the operator did not name (see [ClientCredentials]).
	ErrCredentials = errors.New("audit: client credentials refused")
)

// ClientCredentials configures an OAuth 2.0 client credentials grant
// (RFC 6749 §4.4) that obtains the audit's token. The client secret goes
// only to a token endpoint the operator named: TokenURL, or the
// token_endpoint of Issuer's metadata when it is on the same origin as
// that metadata. Never to one the audited server names, and never over
// plain http except to a loopback host. Otherwise the grant is refused
// ([ErrCredentials]) and nothing is sent.
type ClientCredentials struct {
	// TokenURL is the token endpoint: https, or http on a loopback host.
	// Empty means the token_endpoint of Issuer's metadata.
	TokenURL string
	// Issuer is the authorization server whose metadata (RFC 8414, at the
	// well-known URLs of the MCP discovery order) names the token
	// endpoint, when TokenURL is empty. Its token_endpoint must be on the
	// origin of the metadata URL. Empty with an empty TokenURL means the
	// grant is refused: the audited server's authorization_servers are
	// never trusted with a secret.
	Issuer string
	// ClientID and ClientSecret authenticate the client (HTTP Basic,
	// RFC 6749 §2.3.1). ClientID is required to use the grant.
	ClientID, ClientSecret string
	// Scopes are requested with the token. Nil means none (the
	// authorization server's default).
	Scopes []string
}

// Config configures [New]. It is copied; later changes have no effect.
type Config struct {
	// Endpoint is the MCP endpoint URL, e.g. https://mcp.example.com/mcp.
	// Required: http or https, with a host, no fragment.
	Endpoint string
	// Token is a valid access token for Endpoint. Empty (and no
	// ClientCredentials) means the audit runs without credentials, and the
	// checks that need them are skipped.
	Token string
	// Token2 is a valid access token of another principal, ideally of
	// another tenant, for the session-binding and tenant checks.
	Token2 string
	// ClientCredentials, if ClientID is set, obtains Token when Token is
	// empty.
	ClientCredentials ClientCredentials
	// Proxy, if Proxy.Upstream is set, adds the checks of a deployment
	// behind an authorization proxy (PROXY-*).
	Proxy Proxy
	// Tenant2 is the tenant of Token2's principal. Empty means it is read
	// from Token2's claims (tenant, tid, tenant_id, org_id), else a
	// made-up value is used.
	Tenant2 string
	// TenantArg names the tool argument that selects a tenant. Empty means
	// any argument named tenant, tenant_id, tid, org, org_id, organization,
	// workspace, workspace_id, account or account_id.
	TenantArg string
	// CallTools, when false, keeps the audit from calling any tool, so
	// that the step-up and tenant checks are skipped. [New] copies it as
	// given; the command sets it to true unless -no-tool-calls.
	CallTools bool
	// Tools, if not empty, are the only tools called: listed ones with
	// their schema, others (hidden by a filtered tools/list) with no
	// arguments. Empty means every tool listed for Token or Token2.
	Tools []string
	// Timeout bounds each request. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxBody is the most bytes of a response body read. Zero means
	// DefaultMaxBody.
	MaxBody int64
	// Interval is the least time between the starts of two requests.
	// Zero means DefaultInterval; negative means none (tests).
	Interval time.Duration
	// MaxRequests bounds the requests of one run. Zero means
	// DefaultMaxRequests.
	MaxRequests int
	// MaxTools bounds the tools called. Zero means DefaultMaxTools.
	MaxTools int
	// Deadline bounds the whole run: requests not sent by then are not
	// sent, their checks are skipped, and Run returns [ErrDeadline]. Zero
	// means DefaultDeadline.
	Deadline time.Duration
	// MaxRequestsPerHost bounds the requests of one run to any one host
	// reached through a URL the audited server handed the audit (its
	// authorization servers, resource_metadata, jwks_uri). The origins
	// the operator named (Endpoint, Proxy.Upstream, ClientCredentials'
	// Issuer and TokenURL) are bounded by MaxRequests only. Zero means
	// DefaultMaxRequestsPerHost.
	MaxRequestsPerHost int
	// RootCAs, if not nil, replaces the system roots (a staging server
	// with a private CA).
	RootCAs *x509.CertPool
	// Now is the clock for the times in forged tokens. Nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBody <= 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.MaxTools <= 0 {
		c.MaxTools = DefaultMaxTools
	}
	if c.Deadline <= 0 {
		c.Deadline = DefaultDeadline
	}
	if c.MaxRequestsPerHost <= 0 {
		c.MaxRequestsPerHost = DefaultMaxRequestsPerHost
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Tools = append([]string(nil), c.Tools...)
	c.ClientCredentials.Scopes = append([]string(nil), c.ClientCredentials.Scopes...)
	return c
}

// checkEndpoint parses the endpoint URL.
func checkEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: Endpoint is not a URL", ErrConfig)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: Endpoint must be an http or https URL", ErrConfig)
	case u.Host == "" || u.User != nil:
		return nil, fmt.Errorf("%w: Endpoint must have a host and no userinfo", ErrConfig)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return nil, fmt.Errorf("%w: Endpoint must not have a fragment", ErrConfig)
	}
	return u, nil
}
