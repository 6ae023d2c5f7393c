package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
)

// Identifiers of the JWT bearer grant (RFC 7523 §2.1) and of the
// Identity Assertion JWT Authorization Grant
// (draft-ietf-oauth-identity-assertion-authz-grant §4.3, §9).
const (
	grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// maxAssertionBytes caps a workload JWT read from a file or a callback.
const maxAssertionBytes = 16 << 10

// IDJAGConfig configures [NewIDJAG].
type IDJAGConfig struct {
	// Client is the MCP client's registration at the MCP authorization
	// server, which authenticates the JWT bearer grant (MCP
	// Enterprise-Managed Authorization §5: "The MCP Client authenticates
	// with its credentials as registered with the Resource Authorization
	// Server"): ClientID and ClientSecret or PrivateKey, Issuer or
	// AnyIssuer, with the rules of [NewClientCredentials]. Required.
	Client ClientCredentialsConfig
	// IdPTokenURL is the enterprise identity provider's token endpoint,
	// where the identity assertion is exchanged for an ID-JAG (RFC 8693).
	// Required; https, or http with a loopback host.
	IdPTokenURL string
	// IdPClientID and IdPClientSecret authenticate the token exchange at
	// the identity provider, as for [ExchangeConfig]: HTTP Basic when
	// IdPClientSecret is set, client_id alone otherwise (the extension's
	// §4: client authentication is required when single sign-on used it).
	IdPClientID, IdPClientSecret string
	// IdentityAssertion returns the user's identity assertion, the
	// RFC 8693 subject token: the ID token of the user's single sign-on,
	// or an identity provider refresh token (SubjectTokenType). It is
	// called for every new access token, since an ID-JAG is short-lived
	// and single use; it should return a fresh ID token when the one it
	// holds has expired. Required.
	IdentityAssertion func(ctx context.Context) (string, error)
	// SubjectTokenType is the RFC 8693 subject_token_type of
	// IdentityAssertion. Empty means
	// "urn:ietf:params:oauth:token-type:id_token".
	SubjectTokenType string
	// IdPHTTPClient sends the token exchange. If nil, a client with a 10
	// second timeout; redirects are refused.
	IdPHTTPClient *http.Client
}

// IDJAG is an [Authorizer] for the MCP Enterprise-Managed Authorization
// extension (io.modelcontextprotocol/enterprise-managed-authorization,
// SEP-990): for every new access token it exchanges the user's identity
// assertion at the enterprise identity provider for an Identity Assertion
// JWT Authorization Grant (RFC 8693; requested_token_type
// urn:ietf:params:oauth:token-type:id-jag, audience the MCP authorization
// server's issuer identifier, resource the MCP server's resource
// identifier, scope the requested scopes), then presents it to the MCP
// authorization server with the JWT bearer grant (RFC 7523 §2.1) and the
// client's authentication. No user interaction is needed, so a 401 or a
// step-up is answered at once. Errors: a refused token exchange is an
// [*Error] of reason "token_exchange" (with the RFC 6749 §5.2 Code), a
// refused grant wraps the *oauth2.RetrieveError (ErrorCode
// "invalid_grant", ...); neither is retried. Assertions and secrets are
// never part of an error text. Create it with [NewIDJAG]; it is safe for
// concurrent use.
type IDJAG struct {
	cc  *ClientCredentials
	cfg IDJAGConfig
}

var _ Authorizer = (*IDJAG)(nil)

// NewIDJAG returns an IDJAG for cfg. It fails with an [*Error] of reason
// "config" when cfg.Client is refused by [NewClientCredentials], or
// IdPTokenURL or IdentityAssertion is missing or unusable.
func NewIDJAG(cfg IDJAGConfig) (*IDJAG, error) {
	cc, err := NewClientCredentials(cfg.Client)
	if err != nil {
		return nil, err
	}
	if err := checkEndpoint("IdPTokenURL", cfg.IdPTokenURL); err != nil {
		return nil, err
	}
	if cfg.IdentityAssertion == nil {
		return nil, fmt.Errorf("%w: IdentityAssertion is required", errInvalidConfig)
	}
	if cfg.SubjectTokenType == "" {
		cfg.SubjectTokenType = tokenTypeIDToken
	}
	cfg.IdPHTTPClient = tokenClient(cfg.IdPHTTPClient)
	return &IDJAG{cc: cc, cfg: cfg}, nil
}

// Authorize implements [Authorizer]: it discovers the MCP authorization
// server (which must be cfg.Client.Issuer unless AnyIssuer) and returns a
// token source that runs the token exchange and the JWT bearer grant for
// each new token, after obtaining the first one.
func (a *IDJAG) Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	return a.cc.authorize(ctx, req, a.grant)
}

// grant obtains an ID-JAG for the authorization server md and the
// resource of req, and returns the JWT bearer grant parameters.
func (a *IDJAG) grant(ctx context.Context, md *asmeta.Metadata, req *AuthorizeRequest) (url.Values, error) {
	subject, err := a.cfg.IdentityAssertion(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: identity assertion: %w", errAuthorize, err)
	}
	xc := ExchangeConfig{
		TokenURL:           a.cfg.IdPTokenURL,
		ClientID:           a.cfg.IdPClientID,
		ClientSecret:       a.cfg.IdPClientSecret,
		Audience:           []string{md.Issuer},
		Scopes:             req.Scopes,
		RequestedTokenType: tokenTypeIDJAG,
		SubjectTokenType:   a.cfg.SubjectTokenType,
		Now:                a.cc.cfg.Now,
	}
	if req.Resource != "" {
		xc.Resource = []string{req.Resource}
	}
	tok, err := ExchangeToken(ctx, a.cfg.IdPHTTPClient, xc, subject)
	if err != nil {
		return nil, err
	}
	if t, _ := tok.Extra("issued_token_type").(string); t != tokenTypeIDJAG {
		return nil, fmt.Errorf("%w: the identity provider did not issue an ID-JAG", errTokenExchange)
	}
	return url.Values{"grant_type": {grantTypeJWTBearer}, "assertion": {tok.AccessToken}}, nil
}

// WorkloadIdentityConfig configures [NewWorkloadIdentity].
type WorkloadIdentityConfig struct {
	// TokenFile is the path of the workload JWT, such as a Kubernetes
	// projected service account token or a SPIFFE JWT-SVID written by an
	// agent. It is read again for every new access token (at most 16 KiB,
	// surrounding white space removed), so a rotated file is picked up.
	// Exactly one of TokenFile and Token is required.
	TokenFile string
	// Token returns the workload JWT; it is called for every new access
	// token and should return a fresh JWT before the previous one expires.
	Token func(ctx context.Context) (string, error)
	// ClientID, if set, is sent as the client_id parameter. The extension
	// needs none: the JWT identifies the workload.
	ClientID string
	// Issuer is the authorization server the JWT is presented to; it is
	// sent only to it (see [ClientCredentialsConfig.Issuer]). Required
	// unless AnyIssuer is set.
	Issuer string
	// AnyIssuer uses the first authorization server of the resource's
	// metadata. Only for deployments that trust every resource the
	// transport is configured for.
	AnyIssuer bool
	// HTTPClient sends the token requests. If nil, a client with a 10
	// second timeout. Redirects are refused; the struct is copied.
	HTTPClient *http.Client
	// DiscoveryHTTPClient fetches the authorization server's metadata;
	// nil means asmeta's SSRF-guarded client.
	DiscoveryHTTPClient *http.Client
	// Now is the clock of the JWT expiry check; nil means time.Now.
	Now func() time.Time
}

// WorkloadIdentity is an [Authorizer] for MCP Workload Identity Federation
// (io.modelcontextprotocol/auth/wif, SEP-1933): it presents a workload
// JWT issued by the platform to the MCP authorization server with the JWT
// bearer grant (RFC 7523 §2.1: grant_type
// urn:ietf:params:oauth:grant-type:jwt-bearer, assertion, resource,
// scope), without client authentication. The JWT is read anew for every
// new access token; one whose exp has passed is not sent (an [*Error] of
// reason "authorize"). A refused grant (invalid_grant, invalid_scope,
// unauthorized_client) wraps the *oauth2.RetrieveError and is neither
// retried nor followed by another grant type. The JWT never appears in an
// error text. Create it with [NewWorkloadIdentity]; it is safe for
// concurrent use.
type WorkloadIdentity struct {
	cc  *ClientCredentials
	cfg WorkloadIdentityConfig
}

var _ Authorizer = (*WorkloadIdentity)(nil)

// NewWorkloadIdentity returns a WorkloadIdentity for cfg. It fails with an
// [*Error] of reason "config" when not exactly one of TokenFile and Token
// is set, or neither (or both) of Issuer and AnyIssuer.
func NewWorkloadIdentity(cfg WorkloadIdentityConfig) (*WorkloadIdentity, error) {
	switch {
	case (cfg.TokenFile == "") == (cfg.Token == nil):
		return nil, fmt.Errorf("%w: exactly one of TokenFile and Token is required", errInvalidConfig)
	case cfg.Issuer == "" && !cfg.AnyIssuer:
		return nil, fmt.Errorf("%w: Issuer is required unless AnyIssuer is set", errInvalidConfig)
	case cfg.Issuer != "" && cfg.AnyIssuer:
		return nil, fmt.Errorf("%w: Issuer and AnyIssuer are exclusive", errInvalidConfig)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cc := &ClientCredentials{public: true, cfg: ClientCredentialsConfig{
		ClientID: cfg.ClientID, Issuer: cfg.Issuer, AnyIssuer: cfg.AnyIssuer,
		HTTPClient: tokenClient(cfg.HTTPClient), DiscoveryHTTPClient: cfg.DiscoveryHTTPClient, Now: cfg.Now,
	}}
	return &WorkloadIdentity{cc: cc, cfg: cfg}, nil
}

// Authorize implements [Authorizer]: it discovers the authorization
// server and returns a token source that presents the current workload
// JWT for each new token, after obtaining the first one.
func (w *WorkloadIdentity) Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	return w.cc.authorize(ctx, req, w.grant)
}

// grant reads the workload JWT and returns the JWT bearer grant
// parameters.
func (w *WorkloadIdentity) grant(ctx context.Context, _ *asmeta.Metadata, _ *AuthorizeRequest) (url.Values, error) {
	a, err := w.assertion(ctx)
	if err != nil {
		return nil, err
	}
	return url.Values{"grant_type": {grantTypeJWTBearer}, "assertion": {a}}, nil
}

// assertion returns the current workload JWT, checked to be a compact JWS
// whose exp, if present, has not passed. The signature is the
// authorization server's to check.
func (w *WorkloadIdentity) assertion(ctx context.Context) (string, error) {
	var raw []byte
	if w.cfg.Token != nil {
		s, err := w.cfg.Token(ctx)
		if err != nil {
			return "", fmt.Errorf("%w: workload token: %w", errAuthorize, err)
		}
		raw = []byte(s)
	} else {
		f, err := os.Open(w.cfg.TokenFile)
		if err != nil {
			return "", fmt.Errorf("%w: workload token file: %w", errAuthorize, err)
		}
		raw, err = io.ReadAll(io.LimitReader(f, maxAssertionBytes+1))
		_ = f.Close()
		if err != nil {
			return "", fmt.Errorf("%w: workload token file: %w", errAuthorize, err)
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxAssertionBytes {
		return "", fmt.Errorf("%w: workload token empty or larger than %d bytes", errAuthorize, maxAssertionBytes)
	}
	tok, err := jwt.ParseSigned(string(raw), assertionAlgorithms)
	if err != nil {
		return "", fmt.Errorf("%w: workload token is not a signed JWT", errAuthorize)
	}
	var c jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return "", fmt.Errorf("%w: workload token claims unreadable", errAuthorize)
	}
	if c.Expiry != nil && !w.cfg.Now().Before(c.Expiry.Time()) {
		return "", fmt.Errorf("%w: %w", errAuthorize, errAssertionExpired)
	}
	return string(raw), nil
}

// errAssertionExpired is wrapped when the workload JWT has expired.
var errAssertionExpired = errors.New("client: workload token expired")

// assertionAlgorithms are the JWS algorithms a workload JWT may use.
var assertionAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}
