// Package devmint builds a devas.Server together with a minter of its
// access tokens, for the module's own code that needs tokens without the
// authorization flow: the command's -dev-as banner, the example and the
// tests. A user's tests mint tokens with package authtest, or get them
// from a devas.Server through the flow (issue #26 took minting out of
// devas's public surface).
//
// Both sign with internal/devtoken: New builds the signer from the
// devas.Config first (generating the key when Config.Key is nil) and hands
// its key to devas.New, so the server's /jwks publishes the key the
// minted tokens carry and the token endpoint issues the same tokens.
package devmint

import (
	"fmt"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devtoken"
)

// Server is a devas.Server (an http.Handler) that also mints its tokens.
type Server struct {
	*devas.Server
	tokens *devtoken.Signer
}

// New returns a Server for cfg, as devas.New does.
func New(cfg devas.Config) (*Server, error) {
	tokens, err := devtoken.New(devtoken.Config{
		Issuer: cfg.Issuer, Resources: cfg.Resources, Algorithm: cfg.SigningAlgorithm, Key: cfg.Key,
		KeyID: cfg.KeyID, TTL: cfg.TokenTTL, Now: cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", devas.ErrConfig, err)
	}
	tc := tokens.Config()
	cfg.SigningAlgorithm, cfg.Key, cfg.KeyID = tc.Algorithm, tc.Key, tc.KeyID
	as, err := devas.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Server{Server: as, tokens: tokens}, nil
}

// IssueToken mints an access token as one issued by the token endpoint:
// a compact JWS with header typ "at+jwt" and kid, and claims iss, sub, aud
// (resource, a string), client_id, scope (space-delimited, omitted when
// empty), tenant (omitted when empty), jti, iat, nbf and exp (RFC 9068
// §2.2), valid for Config.TokenTTL. resource must be one of
// Config.Resources ([devtoken.ErrUnknownResource]); subject and clientID
// must be non-empty and scopes must be scope tokens
// ([devtoken.ErrInvalidArgument]); scopes are not checked against
// Config.Scopes, so tests can mint tokens the flows would refuse.
func (s *Server) IssueToken(subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.tokens.IssueToken(subject, tenant, clientID, resource, scopes)
}

// IssueBoundToken is IssueToken for a token bound to the DPoP key whose
// RFC 7638 thumbprint is jkt (cnf.jkt, RFC 9449 §6.1).
func (s *Server) IssueBoundToken(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.tokens.IssueBoundToken(jkt, subject, tenant, clientID, resource, scopes)
}
