package devas

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/devmint"
)

// grant is what an access token (and a refresh token) is issued for.
type grant struct {
	ClientID string
	Subject  string
	Tenant   string
	Resource string
	Scopes   []string
	JKT      string // DPoP key thumbprint the tokens are bound to, or "" (dpop.go)
}

// accessClaims is the JWT access token payload (RFC 9068 §2.2).
type accessClaims struct {
	Issuer    string        `json:"iss"`
	Subject   string        `json:"sub"`
	Audience  string        `json:"aud"`
	ClientID  string        `json:"client_id"`
	Scope     string        `json:"scope,omitempty"`
	Tenant    string        `json:"tenant,omitempty"`
	ID        string        `json:"jti"`
	IssuedAt  int64         `json:"iat"`
	NotBefore int64         `json:"nbf"`
	Expiry    int64         `json:"exp"`
	Cnf       *confirmation `json:"cnf,omitempty"` // DPoP binding (dpop.go)
}

// issueToken mints an access token directly, without any flow: for tests
// and for trying a protected MCP server with curl. The token is the same
// as one issued by the token endpoint: a compact JWS with header typ
// "at+jwt" and kid, and claims iss, sub, aud (resource, a string),
// client_id, scope (space-delimited, omitted when empty), tenant (omitted
// when empty), jti, iat, nbf and exp (RFC 9068 §2.2), valid for
// Config.TokenTTL.
//
// resource must be one of Config.Resources ([devmint.ErrUnknownResource]).
// subject and clientID must be non-empty and scopes must be scope tokens
// ([devmint.ErrInvalidArgument]); scopes are not checked against Config.Scopes,
// so tests can mint tokens the flows would refuse.
func (s *Server) issueToken(subject, tenant, clientID, resource string, scopes []string) (string, error) {
	if subject == "" || clientID == "" || len(subject) > maxParamBytes || len(clientID) > maxURLBytes || len(tenant) > maxParamBytes {
		return "", fmt.Errorf("%w: subject and clientID are required", devmint.ErrInvalidArgument)
	}
	for _, sc := range scopes {
		if !validScopeToken(sc) {
			return "", fmt.Errorf("%w: invalid scope", devmint.ErrInvalidArgument)
		}
	}
	if !slices.Contains(s.cfg.Resources, resource) {
		return "", devmint.ErrUnknownResource
	}
	tok, _, err := s.mint(grant{ClientID: clientID, Subject: subject, Tenant: tenant, Resource: resource, Scopes: slices.Clone(scopes)})
	return tok, err
}

// mint signs an access token for g.
func (s *Server) mint(g grant) (string, time.Time, error) {
	now := s.cfg.Now()
	exp := now.Add(s.cfg.TokenTTL)
	c := accessClaims{
		Issuer:    s.cfg.Issuer,
		Subject:   g.Subject,
		Audience:  g.Resource,
		ClientID:  g.ClientID,
		Scope:     strings.Join(g.Scopes, " "),
		Tenant:    g.Tenant,
		ID:        newJTI(),
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expiry:    exp.Unix(),
	}
	if g.JKT != "" {
		c.Cnf = &confirmation{JKT: g.JKT}
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("devas: encode claims: %w", err)
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("devas: sign: %w", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("devas: serialize: %w", err)
	}
	s.log.Debug("devas: access token issued", "jti", c.ID, "client_id", g.ClientID, "sub", g.Subject, "aud", g.Resource)
	return tok, exp, nil
}

func newJTI() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
