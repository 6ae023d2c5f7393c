// Package devtoken signs the access tokens of devas (RFC 9068): the one
// implementation behind devas's token endpoint and internal/devmint, which
// mints the same tokens without the authorization flow for the module's
// own code (the command's -dev-as banner, the example and the tests).
//
// Its errors are phrased for devas.Config's fields; devas and devmint wrap
// the ones of [New] in devas.ErrConfig.
package devtoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// The errors of [Signer.IssueToken] and [Signer.IssueBoundToken]. The text
// is part of the API.
var (
	// ErrUnknownResource: the resource is not one of Config.Resources
	// (RFC 8707 §2 "invalid_target").
	ErrUnknownResource = errors.New("devas: unknown resource")
	// ErrInvalidArgument: an argument is empty or malformed.
	ErrInvalidArgument = errors.New("devas: invalid argument")
)

// defaultTTL is the access token lifetime when Config.TTL is zero.
const defaultTTL = time.Hour

// maxArgBytes bounds each string argument of IssueToken.
const maxArgBytes = 2048

// Config is what a Signer signs with. Its fields are devas.Config's of
// the same meaning; the zero values mean what devas.Config documents.
type Config struct {
	// Issuer is the iss claim.
	Issuer string
	// Resources are the audiences IssueToken accepts.
	Resources []string
	// Algorithm signs the tokens. Empty means ES256.
	Algorithm jose.SignatureAlgorithm
	// Key is the signing key. If nil, New generates one with crypto/rand.
	Key crypto.Signer
	// KeyID is the kid. Empty means the key's RFC 7638 thumbprint.
	KeyID string
	// TTL is the token lifetime. Zero means one hour.
	TTL time.Duration
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
	// Logger receives each issued token's jti at debug level. If nil,
	// nothing is logged.
	Logger *slog.Logger
}

// Grant is what an access token is issued for.
type Grant struct {
	ClientID string
	Subject  string
	Tenant   string
	Resource string
	Scopes   []string
	JKT      string // DPoP key thumbprint the token is bound to (cnf.jkt), or ""
}

// Signer signs access tokens. It is safe for concurrent use.
type Signer struct {
	cfg    Config
	signer jose.Signer
	pub    jose.JSONWebKey
}

// New returns a Signer for cfg with its defaults applied.
func New(cfg Config) (*Signer, error) {
	if cfg.Algorithm == "" {
		cfg.Algorithm = jose.ES256
	}
	if cfg.TTL == 0 {
		cfg.TTL = defaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Resources = slices.Clone(cfg.Resources)
	if cfg.Key == nil {
		var err error
		if cfg.Key, err = generateKey(cfg.Algorithm); err != nil {
			return nil, err
		}
	}
	if err := checkKey(cfg.Algorithm, cfg.Key); err != nil {
		return nil, err
	}
	pub := jose.JSONWebKey{Key: cfg.Key.Public(), Algorithm: string(cfg.Algorithm), Use: "sig", KeyID: cfg.KeyID}
	if pub.KeyID == "" {
		tp, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("key thumbprint: %w", err)
		}
		pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	}
	if !pub.Valid() {
		return nil, errors.New("invalid key")
	}
	cfg.KeyID = pub.KeyID
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: cfg.Algorithm, Key: jose.JSONWebKey{Key: cfg.Key, KeyID: pub.KeyID}},
		(&jose.SignerOptions{}).WithType("at+jwt"),
	)
	if err != nil {
		return nil, fmt.Errorf("signer: %w", err)
	}
	return &Signer{cfg: cfg, signer: signer, pub: pub}, nil
}

// Config returns the Signer's configuration with its defaults applied:
// Algorithm, Key, KeyID, TTL, Now and Logger are set.
func (s *Signer) Config() Config {
	c := s.cfg
	c.Resources = slices.Clone(c.Resources)
	return c
}

// PublicKey returns the public JWK of the signing key (alg, use "sig",
// kid).
func (s *Signer) PublicKey() jose.JSONWebKey { return s.pub }

// claims is the JWT access token payload (RFC 9068 §2.2).
type claims struct {
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
	Cnf       *confirmation `json:"cnf,omitempty"`
}

// confirmation is the access token's "cnf" claim (RFC 7800, RFC 9449 §6.1).
type confirmation struct {
	JKT string `json:"jkt"`
}

// Sign returns an access token for g, valid from now for Config.TTL: a
// compact JWS with header typ "at+jwt" and kid, and claims iss, sub, aud
// (g.Resource, a string), client_id, scope (space-delimited, omitted when
// empty), tenant (omitted when empty), jti, iat, nbf, exp and, when g.JKT
// is set, cnf.jkt. g is not checked: the token endpoint checked it.
func (s *Signer) Sign(g Grant) (string, error) {
	now := s.cfg.Now()
	c := claims{
		Issuer:    s.cfg.Issuer,
		Subject:   g.Subject,
		Audience:  g.Resource,
		ClientID:  g.ClientID,
		Scope:     strings.Join(g.Scopes, " "),
		Tenant:    g.Tenant,
		ID:        newJTI(),
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expiry:    now.Add(s.cfg.TTL).Unix(),
	}
	if g.JKT != "" {
		c.Cnf = &confirmation{JKT: g.JKT}
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("devas: encode claims: %w", err)
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("devas: sign: %w", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("devas: serialize: %w", err)
	}
	s.cfg.Logger.Debug("devas: access token issued", "jti", c.ID, "client_id", g.ClientID, "sub", g.Subject, "aud", g.Resource)
	return tok, nil
}

// IssueToken mints the token the token endpoint would issue for the
// grant, without any flow. resource must be one of Config.Resources
// ([ErrUnknownResource]); subject and clientID must be non-empty, every
// argument at most 2048 bytes and scopes scope tokens
// ([ErrInvalidArgument]); scopes are not checked against devas's
// Config.Scopes, so tests can mint tokens the flows would refuse.
func (s *Signer) IssueToken(subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.issue(Grant{ClientID: clientID, Subject: subject, Tenant: tenant, Resource: resource, Scopes: slices.Clone(scopes)})
}

// IssueBoundToken is IssueToken for a token bound to the DPoP key whose
// RFC 7638 thumbprint is jkt (cnf.jkt, RFC 9449 §6.1).
func (s *Signer) IssueBoundToken(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error) {
	if jkt == "" || len(jkt) > maxArgBytes {
		return "", fmt.Errorf("%w: jkt is required", ErrInvalidArgument)
	}
	return s.issue(Grant{ClientID: clientID, Subject: subject, Tenant: tenant, Resource: resource, Scopes: slices.Clone(scopes), JKT: jkt})
}

func (s *Signer) issue(g Grant) (string, error) {
	if g.Subject == "" || g.ClientID == "" || len(g.Subject) > maxArgBytes || len(g.ClientID) > maxArgBytes || len(g.Tenant) > maxArgBytes {
		return "", fmt.Errorf("%w: subject and clientID are required", ErrInvalidArgument)
	}
	for _, sc := range g.Scopes {
		if len(sc) > maxArgBytes || !scopetoken.Valid(sc) {
			return "", fmt.Errorf("%w: invalid scope", ErrInvalidArgument)
		}
	}
	if !slices.Contains(s.cfg.Resources, g.Resource) {
		return "", ErrUnknownResource
	}
	return s.Sign(g)
}

func newJTI() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// generateKey makes a fresh key for alg with crypto/rand.
func generateKey(alg jose.SignatureAlgorithm) (crypto.Signer, error) {
	switch alg {
	case jose.ES256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		return rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, errors.New("unsupported SigningAlgorithm")
}

// checkKey verifies that key suits alg.
func checkKey(alg jose.SignatureAlgorithm, key crypto.Signer) error {
	ok := false
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		want := map[jose.SignatureAlgorithm]elliptic.Curve{
			jose.ES256: elliptic.P256(), jose.ES384: elliptic.P384(), jose.ES512: elliptic.P521(),
		}[alg]
		ok = want != nil && k.Curve == want
	case *rsa.PrivateKey:
		switch alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			ok = k.N.BitLen() >= 2048
		}
	case ed25519.PrivateKey:
		ok = alg == jose.EdDSA
	}
	if !ok {
		return errors.New("key does not suit SigningAlgorithm (or RSA key under 2048 bits)")
	}
	return nil
}
