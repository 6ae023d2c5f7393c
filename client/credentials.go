package client

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/keyalg"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpguard/mcpguard/asmeta"
)

// Client authentication methods at the token endpoint (RFC 7591 §2,
// RFC 7523 §2.2) that [ClientCredentials] supports.
const (
	authClientSecretBasic = "client_secret_basic"
	authClientSecretPost  = "client_secret_post"
	authPrivateKeyJWT     = "private_key_jwt"
)

// clientAssertionType is the RFC 7523 §2.2 client_assertion_type.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is the lifetime of a private_key_jwt assertion.
const assertionLifetime = time.Minute

// ClientCredentialsConfig configures [NewClientCredentials].
type ClientCredentialsConfig struct {
	// ClientID is the client's identifier at the authorization server.
	// Required.
	ClientID string
	// ClientSecret is the secret for client_secret_basic and
	// client_secret_post. Exactly one of ClientSecret and PrivateKey is
	// required.
	ClientSecret string
	// PrivateKey signs the private_key_jwt client assertions (RFC 7523
	// §2.2): an *ecdsa.PrivateKey (P-256, P-384, P-521: ES256/384/512),
	// an *rsa.PrivateKey of 2048 bits or more (RS256) or an
	// ed25519.PrivateKey (EdDSA).
	PrivateKey crypto.Signer
	// SigningAlgorithm overrides the algorithm derived from PrivateKey
	// (e.g. "PS256" for an RSA key). It must fit the key.
	SigningAlgorithm string
	// KeyID, if set, is the assertions' "kid" header.
	KeyID string
	// AuthMethod is the client authentication method: authClientSecretBasic,
	// authClientSecretPost or authPrivateKeyJWT. Zero means
	// private_key_jwt with PrivateKey; with ClientSecret, the first of
	// client_secret_basic and client_secret_post that the authorization
	// server's token_endpoint_auth_methods_supported lists
	// (client_secret_basic, the RFC 8414 default, when it lists none).
	AuthMethod string
	// Issuer is the authorization server the credentials belong to. They
	// are sent only to it: Authorize fails with an [*Error] of reason
	// "authorize" when the resource's metadata does not list it, since a
	// resource naming another server would otherwise receive the secret.
	// Required unless AnyIssuer is set.
	Issuer string
	// AnyIssuer uses the first authorization server of the resource's
	// metadata, whichever it is. Only for deployments that trust every
	// resource the transport is configured for.
	AnyIssuer bool
	// HTTPClient sends the token requests. If nil, a client with a 10
	// second timeout. Redirects are refused; the struct is copied.
	HTTPClient *http.Client
	// DiscoveryHTTPClient fetches the authorization server's metadata
	// (asmeta.Discover); nil means asmeta's SSRF-guarded client, which
	// refuses loopback and private addresses (use
	// asmeta.NewGuardedClient with InsecureAllowLoopback in tests).
	DiscoveryHTTPClient *http.Client
	// Now is the clock of the assertions' iat and exp; nil means
	// time.Now.
	Now func() time.Time
}

// ClientCredentials is an [Authorizer] for machine clients: the OAuth 2.0
// client credentials grant (RFC 6749 §4.4) of the MCP OAuth client
// credentials extension (io.modelcontextprotocol/oauth-client-credentials,
// SEP-1046), with client_secret_basic, client_secret_post or
// private_key_jwt (RFC 7523) client authentication. It discovers the
// authorization server's token endpoint (RFC 8414) on every Authorize, and
// requests exactly AuthorizeRequest.Scopes for AuthorizeRequest.Resource
// (RFC 8707). With AuthorizeRequest.DPoP, token requests carry DPoP
// proofs. Create it with [NewClientCredentials]; it is safe for concurrent
// use.
type ClientCredentials struct {
	cfg    ClientCredentialsConfig
	signer jose.Signer // nil unless private_key_jwt
	public bool        // no client authentication (WorkloadIdentity)
}

var _ Authorizer = (*ClientCredentials)(nil)

// NewClientCredentials returns a ClientCredentials for cfg. It fails with
// an [*Error] of reason "config" if ClientID is missing, not exactly
// one of ClientSecret and PrivateKey is set, AuthMethod does not fit the
// credential, the key or algorithm is unusable, or neither Issuer nor
// AnyIssuer is set.
func NewClientCredentials(cfg ClientCredentialsConfig) (*ClientCredentials, error) {
	switch {
	case cfg.ClientID == "":
		return nil, fmt.Errorf("%w: ClientID is required", errInvalidConfig)
	case (cfg.ClientSecret == "") == (cfg.PrivateKey == nil):
		return nil, fmt.Errorf("%w: exactly one of ClientSecret and PrivateKey is required", errInvalidConfig)
	case cfg.Issuer == "" && !cfg.AnyIssuer:
		return nil, fmt.Errorf("%w: Issuer is required unless AnyIssuer is set", errInvalidConfig)
	case cfg.Issuer != "" && cfg.AnyIssuer:
		return nil, fmt.Errorf("%w: Issuer and AnyIssuer are exclusive", errInvalidConfig)
	}
	c := &ClientCredentials{cfg: cfg}
	if cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	c.cfg.HTTPClient = tokenClient(cfg.HTTPClient)
	if cfg.PrivateKey == nil {
		switch cfg.AuthMethod {
		case "", authClientSecretBasic, authClientSecretPost:
		default:
			return nil, fmt.Errorf("%w: AuthMethod %q does not fit a client secret", errInvalidConfig, cfg.AuthMethod)
		}
		return c, nil
	}
	if cfg.AuthMethod != "" && cfg.AuthMethod != authPrivateKeyJWT {
		return nil, fmt.Errorf("%w: AuthMethod %q does not fit a private key", errInvalidConfig, cfg.AuthMethod)
	}
	c.cfg.AuthMethod = authPrivateKeyJWT
	alg := jose.SignatureAlgorithm(cfg.SigningAlgorithm)
	if alg == "" {
		alg = keyAlgorithm(cfg.PrivateKey)
	}
	if alg == "" || !algorithmFits(alg, cfg.PrivateKey) {
		return nil, fmt.Errorf("%w: unsupported key %T or algorithm %q", errInvalidConfig, cfg.PrivateKey, cfg.SigningAlgorithm)
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if cfg.KeyID != "" {
		opts = opts.WithHeader("kid", cfg.KeyID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: cfg.PrivateKey}, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	c.signer = s
	return c, nil
}

// keyAlgorithm is the default JWS algorithm for key, "" for an RSA key
// under 2048 bits.
func keyAlgorithm(key crypto.Signer) jose.SignatureAlgorithm {
	if k, ok := key.(*rsa.PrivateKey); ok && k.N.BitLen() < 2048 {
		return ""
	}
	return keyalg.Default(key.Public())
}

// algorithmFits reports whether alg can be used with key.
func algorithmFits(alg jose.SignatureAlgorithm, key crypto.Signer) bool {
	def := keyAlgorithm(key)
	switch key.(type) {
	case *rsa.PrivateKey:
		return def != "" && slices.Contains([]jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}, alg)
	default:
		return alg == def
	}
}

// algorithm is the assertions' JWS algorithm.
func (c *ClientCredentials) algorithm() string {
	if c.cfg.SigningAlgorithm != "" {
		return c.cfg.SigningAlgorithm
	}
	return string(keyAlgorithm(c.cfg.PrivateKey))
}

// Authorize implements [Authorizer]: it discovers the authorization
// server's metadata and returns a token source for the client credentials
// grant, after obtaining its first token. A failed token request wraps
// an [*Error] of reason "authorize" and the *oauth2.RetrieveError
// (errors.As), whose body the error text does not repeat.
func (c *ClientCredentials) Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	return c.authorize(ctx, req, nil)
}

// tokenGrant returns the grant parameters (grant_type and what it needs)
// of one token request at the authorization server md, replacing the
// client credentials grant. It runs for every token request, so that an
// assertion is never presented twice.
type tokenGrant func(ctx context.Context, md *asmeta.Metadata, req *AuthorizeRequest) (url.Values, error)

// authorize is Authorize with the grant of each token request: the client
// credentials grant when grant is nil.
func (c *ClientCredentials) authorize(ctx context.Context, req AuthorizeRequest, grant tokenGrant) (oauth2.TokenSource, error) {
	if req.ResourceMetadata == nil || len(req.ResourceMetadata.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: no authorization server", errAuthorize)
	}
	issuer := req.ResourceMetadata.AuthorizationServers[0]
	if !c.cfg.AnyIssuer {
		if !slices.Contains(req.ResourceMetadata.AuthorizationServers, c.cfg.Issuer) {
			return nil, fmt.Errorf("%w: the resource does not name the configured issuer", errAuthorize)
		}
		issuer = c.cfg.Issuer
	}
	md, err := asmeta.Discover(ctx, c.cfg.DiscoveryHTTPClient, issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthorize, err)
	}
	if err := checkEndpoint("token_endpoint", md.TokenEndpoint); err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthorize, err)
	}
	if grant != nil && len(md.GrantTypesSupported) > 0 && !slices.Contains(md.GrantTypesSupported, grantTypeJWTBearer) {
		return nil, fmt.Errorf("%w: the authorization server does not support the JWT bearer grant", errAuthorize)
	}
	method, err := c.method(md)
	if err != nil {
		return nil, err
	}
	params := url.Values{}
	if req.Resource != "" {
		params.Set("resource", req.Resource)
	}
	cc := &clientcredentials.Config{
		ClientID:       c.cfg.ClientID,
		TokenURL:       md.TokenEndpoint,
		Scopes:         slices.Clone(req.Scopes),
		EndpointParams: params,
		AuthStyle:      oauth2.AuthStyleInParams,
	}
	switch method {
	case authClientSecretBasic:
		cc.ClientSecret, cc.AuthStyle = c.cfg.ClientSecret, oauth2.AuthStyleInHeader
	case authClientSecretPost:
		cc.ClientSecret = c.cfg.ClientSecret
	}
	hc := c.cfg.HTTPClient
	if req.DPoP != nil {
		h := *hc
		base := h.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		h.Transport = req.DPoP.TokenTransport(base)
		hc = &h
	}
	// Later token requests outlive this request's context: detach it,
	// keeping its values.
	src := &ccSource{c: c, cc: cc, audience: md.Issuer, hc: hc, ctx: context.WithoutCancel(ctx), grant: grant, md: md, req: req}
	tok, err := src.token(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthorize, err)
	}
	return oauth2.ReuseTokenSource(tok, src), nil
}

// tokenError is a failed token request. Its text has the status only, not
// the server's answer, which the wrapped *oauth2.RetrieveError keeps.
type tokenError struct{ err error }

func (e tokenError) Error() string {
	var re *oauth2.RetrieveError
	if errors.As(e.err, &re) && re.Response != nil {
		return "client: token request failed: status " + strconv.Itoa(re.Response.StatusCode)
	}
	return "client: token request failed"
}

func (e tokenError) Unwrap() error { return e.err }

// method picks the client authentication method for md.
func (c *ClientCredentials) method(md *asmeta.Metadata) (string, error) {
	if c.public {
		return "none", nil
	}
	supported := md.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{authClientSecretBasic} // RFC 8414 §2 default
	}
	if c.cfg.AuthMethod != "" {
		if !slices.Contains(supported, c.cfg.AuthMethod) {
			return "", fmt.Errorf("%w: the authorization server does not support %s", errAuthorize, c.cfg.AuthMethod)
		}
		if c.cfg.AuthMethod == authPrivateKeyJWT && len(md.TokenEndpointAuthSigningAlgValuesSupported) > 0 &&
			!slices.Contains(md.TokenEndpointAuthSigningAlgValuesSupported, c.algorithm()) {
			return "", fmt.Errorf("%w: the authorization server does not accept %s assertions", errAuthorize, c.algorithm())
		}
		return c.cfg.AuthMethod, nil
	}
	for _, m := range []string{authClientSecretBasic, authClientSecretPost} {
		if slices.Contains(supported, m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: the authorization server supports no client secret method", errAuthorize)
}

// ccSource obtains client credentials tokens, with a new assertion for
// every request.
type ccSource struct {
	c        *ClientCredentials
	cc       *clientcredentials.Config
	audience string
	hc       *http.Client
	ctx      context.Context
	grant    tokenGrant // nil: the client credentials grant
	md       *asmeta.Metadata
	req      AuthorizeRequest
}

// Token obtains a new token. A failure of the token endpoint is a
// tokenError wrapping the *oauth2.RetrieveError.
func (s *ccSource) Token() (*oauth2.Token, error) { return s.token(s.ctx) }

func (s *ccSource) token(ctx context.Context) (*oauth2.Token, error) {
	cc := s.cc
	if s.c.signer != nil || s.grant != nil {
		cp := *cc
		cp.EndpointParams = url.Values{}
		for k, v := range cc.EndpointParams {
			cp.EndpointParams[k] = v
		}
		if s.grant != nil {
			g, err := s.grant(ctx, s.md, &s.req)
			if err != nil {
				return nil, err
			}
			for k, v := range g { // clientcredentials lets grant_type be replaced
				cp.EndpointParams[k] = v
			}
		}
		if s.c.signer != nil {
			a, err := s.c.assertion(s.audience)
			if err != nil {
				return nil, err
			}
			cp.EndpointParams.Set("client_assertion_type", clientAssertionType)
			cp.EndpointParams.Set("client_assertion", a)
		}
		cc = &cp
	}
	// x/oauth2 takes its HTTP client from the context.
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, s.hc))
	if err != nil {
		return nil, tokenError{err}
	}
	return tok, nil
}

// assertion returns a private_key_jwt client assertion for the
// authorization server aud (RFC 7523 §3: iss and sub the client_id, aud
// the issuer identifier, a unique jti, a short exp).
func (c *ClientCredentials) assertion(aud string) (string, error) {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	now := c.cfg.Now()
	claims := jwt.Claims{
		Issuer:   c.cfg.ClientID,
		Subject:  c.cfg.ClientID,
		Audience: jwt.Audience{aud},
		ID:       base64.RawURLEncoding.EncodeToString(jti),
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(assertionLifetime)),
	}
	s, err := jwt.Signed(c.signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("%w: sign client assertion: %w", errAuthorize, err)
	}
	return s, nil
}
