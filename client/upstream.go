package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// tokenTimeout is the timeout of the default client for token requests.
const tokenTimeout = 10 * time.Second

// errNoRedirect makes token-endpoint clients refuse redirects.
var errNoRedirect = errors.New("client: redirect refused")

// UpstreamConfig configures [UpstreamTokenSource]: an OAuth 2.0 client
// credentials grant (RFC 6749 §4.4) for the MCP server's own calls to an
// upstream API.
type UpstreamConfig struct {
	// TokenURL is the upstream authorization server's token endpoint.
	// Required; https, or http with a loopback host.
	TokenURL string
	// ClientID is the MCP server's client identifier at that server.
	// Required.
	ClientID string
	// ClientSecret is the client secret; "" for other client
	// authentication set up through HTTPClient (e.g. mTLS).
	ClientSecret string
	// Scopes are the scopes to request; nil sends no scope parameter.
	Scopes []string
	// Resource, if set, is sent as the RFC 8707 resource parameter (the
	// upstream API's resource identifier).
	Resource string
	// Audience, if set, is sent as the "audience" parameter that some
	// authorization servers use instead of resource.
	Audience string
	// EndpointParams are further token request parameters. They must not
	// repeat resource or audience when those fields are set.
	EndpointParams url.Values
	// AuthStyle is how client credentials are sent; zero auto-detects
	// (x/oauth2 tries HTTP Basic first).
	AuthStyle oauth2.AuthStyle
	// HTTPClient sends the token requests. If nil, a client with a 10
	// second timeout. Redirects are refused in both cases; the struct is
	// copied.
	HTTPClient *http.Client
}

// UpstreamTokenSource returns a token source for the MCP server's own
// upstream calls, using the client credentials grant with cfg. Tokens are
// cached until they expire.
//
// Use it instead of forwarding the token the MCP client sent: "The MCP
// server MUST NOT pass through the token it received from the MCP client"
// (MCP §Access Token Privilege Restriction). To act for the user upstream,
// use [ExchangeToken].
//
// ctx is used for every token request the source makes (an x/oauth2
// design), so pass a long-lived context, not a request's. An invalid cfg
// yields a source whose Token always fails with an [*Error] of reason
// "config".
func UpstreamTokenSource(ctx context.Context, cfg UpstreamConfig) oauth2.TokenSource {
	if err := checkEndpoint("TokenURL", cfg.TokenURL); err != nil {
		return errSource{err}
	}
	if cfg.ClientID == "" {
		return errSource{fmt.Errorf("%w: ClientID is required", errInvalidConfig)}
	}
	params := url.Values{}
	for k, v := range cfg.EndpointParams {
		params[k] = append([]string(nil), v...)
	}
	for _, p := range []struct{ name, v string }{{"resource", cfg.Resource}, {"audience", cfg.Audience}} {
		if p.v == "" {
			continue
		}
		if params.Has(p.name) {
			return errSource{fmt.Errorf("%w: %s set twice", errInvalidConfig, p.name)}
		}
		params.Set(p.name, p.v)
	}
	cc := &clientcredentials.Config{
		ClientID:       cfg.ClientID,
		ClientSecret:   cfg.ClientSecret,
		TokenURL:       cfg.TokenURL,
		Scopes:         append([]string(nil), cfg.Scopes...),
		EndpointParams: params,
		AuthStyle:      cfg.AuthStyle,
	}
	// x/oauth2 takes its HTTP client from the context; this is the only
	// place this package does so.
	ctx = context.WithValue(ctx, oauth2.HTTPClient, tokenClient(cfg.HTTPClient))
	return cc.TokenSource(ctx)
}

// tokenClient returns a copy of c (or a default client) that refuses
// redirects, so that credentials are not replayed elsewhere.
func tokenClient(c *http.Client) *http.Client {
	var hc http.Client
	if c != nil {
		hc = *c
	} else {
		hc.Timeout = tokenTimeout
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errNoRedirect }
	return &hc
}

// errSource is a token source that always fails.
type errSource struct{ err error }

func (s errSource) Token() (*oauth2.Token, error) { return nil, s.err }
