package proxy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/internal/keyalg"
	"github.com/mcpguard/mcpguard/middleware"
)

// assertionType is the JOSE "typ" of an assertion: it is an access token
// for the upstream (RFC 9068), so a resource server that insists on
// at+jwt, mcpguard included, accepts it.
const assertionType = "at+jwt"

// maxKeyFileBytes bounds the signing key file.
const maxKeyFileBytes = 64 << 10

// signer signs assertions and serves the public key as a JWK Set.
type signer struct {
	issuer string
	s      jose.Signer
	jwks   []byte // the JWK Set document
	kid    string
}

// readPEM reads the first PEM block of a bounded file; field names it in
// errors.
func readPEM(field, path string) (*pem.Block, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if fi.Size() > maxKeyFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", field, maxKeyFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s %s: no PEM block", field, path)
	}
	return blk, nil
}

// loadPublicKey reads a PEM public key ("PUBLIC KEY", PKIX) or the
// public half of a private key file.
func loadPublicKey(field, path string) (crypto.PublicKey, error) {
	blk, err := readPEM(field, path)
	if err != nil {
		return nil, err
	}
	if blk.Type != "PUBLIC KEY" {
		k, err := loadKey(field, path)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, path, err)
	}
	return k, nil
}

// loadKey reads a PEM private key file; field names it in errors.
func loadKey(field, path string) (crypto.Signer, error) {
	blk, err := readPEM(field, path)
	if err != nil {
		return nil, err
	}
	k, err := keyalg.ParsePrivateKey(blk)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, path, err)
	}
	return k, nil
}

// publicJWK is the JWK of a public key, its kid the RFC 7638
// thumbprint.
func publicJWK(key crypto.PublicKey) (jose.JSONWebKey, jose.SignatureAlgorithm, error) {
	alg, err := keyalg.Assertion(key)
	if err != nil {
		return jose.JSONWebKey{}, "", err
	}
	pub := jose.JSONWebKey{Key: key, Algorithm: string(alg), Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return jose.JSONWebKey{}, "", err
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return pub, alg, nil
}

// newSigner returns the signer of issuer with key (a new P-256 key when
// nil), its JWK Set publishing key and then each of publish (never
// signing with them), each key once.
func newSigner(issuer string, key crypto.Signer, publish []crypto.PublicKey) (*signer, error) {
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		key = k
	}
	pub, alg, err := publicJWK(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: assertion key: %w", ErrConfig, err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}}
	for i, k := range publish {
		j, _, err := publicJWK(k)
		if err != nil {
			return nil, fmt.Errorf("%w: assertion.publish_key_files[%d]: %w", ErrConfig, i, err)
		}
		if len(set.Key(j.KeyID)) == 0 {
			set.Keys = append(set.Keys, j)
		}
	}
	doc, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType(assertionType).WithHeader("kid", pub.KeyID))
	if err != nil {
		return nil, fmt.Errorf("%w: assertion key: %w", ErrConfig, err)
	}
	return &signer{issuer: issuer, s: js, jwks: append(doc, '\n'), kid: pub.KeyID}, nil
}

// ServeHTTP serves the JWK Set.
func (s *signer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	if r.Method == http.MethodGet {
		_, _ = w.Write(s.jwks)
	}
}

// assertionClaims are the claims of an assertion besides the registered
// ones.
type assertionClaims struct {
	ClientID string `json:"client_id,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	// OrigIssuer is the issuer of the client's token (the authorization
	// server), so that a subject is unambiguous across issuers.
	OrigIssuer string `json:"idp,omitempty"`
	// DPoPBound reports a sender-constrained client token (RFC 9449) whose
	// proof the proxy checked.
	DPoPBound bool `json:"dpop_bound,omitempty"`
}

// sign returns a new assertion for p, for audience, valid until exp.
func (s *signer) sign(p *middleware.Principal, audience string, now, exp time.Time) (string, error) {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	std := jwt.Claims{
		Issuer:   s.issuer,
		Subject:  p.Subject,
		Audience: jwt.Audience{audience},
		Expiry:   jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(now),
		ID:       base64.RawURLEncoding.EncodeToString(jti),
	}
	extra := assertionClaims{ClientID: p.ClientID, Scope: strings.Join(p.Scopes, " "), Tenant: p.Tenant,
		OrigIssuer: p.Issuer, DPoPBound: p.SenderConstrained}
	return jwt.Signed(s.s).Claims(std).Claims(extra).Serialize()
}

// assertions mints and caches the assertions of one route: a principal
// with the same scopes reuses its assertion until half its lifetime has
// passed, so that signing is not on every request's path.
type assertions struct {
	s        *signer
	audience string
	ttl      time.Duration
	now      func() time.Time
	prefix   string // "Bearer " in Authorization, else ""

	mu    sync.Mutex
	cache map[string]cachedToken
}

// cachedToken is a minted or exchanged token and when to stop reusing it.
type cachedToken struct {
	token   string
	refresh time.Time // reuse before this instant
}

func newAssertions(s *signer, audience string, ttl time.Duration, now func() time.Time, prefix string) *assertions {
	return &assertions{s: s, audience: audience, ttl: ttl, now: now, prefix: prefix, cache: map[string]cachedToken{}}
}

// principalKey identifies a principal and its grant for caching.
func principalKey(p *middleware.Principal) string {
	var b strings.Builder
	b.WriteString(p.ID())
	b.WriteByte(0)
	for _, s := range p.Scopes {
		b.WriteString(s)
		b.WriteByte(' ')
	}
	if p.SenderConstrained {
		b.WriteString("\x00dpop")
	}
	return b.String()
}

// get returns the header value carrying the assertion of p.
func (a *assertions) get(p *middleware.Principal) (string, error) {
	now := a.now()
	key := principalKey(p)
	a.mu.Lock()
	c, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(c.refresh) {
		return c.token, nil
	}
	exp := now.Add(a.ttl)
	if !p.Expiry.IsZero() && p.Expiry.Before(exp) {
		exp = p.Expiry // never outlive the client's token
	}
	tok, err := a.s.sign(p, a.audience, now, exp)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	if len(a.cache) >= defaultIdentityCacheKeys {
		for k, v := range a.cache {
			if !now.Before(v.refresh) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= defaultIdentityCacheKeys {
			clear(a.cache)
		}
	}
	v := a.prefix + tok
	a.cache[key] = cachedToken{token: v, refresh: now.Add(exp.Sub(now) / 2)}
	a.mu.Unlock()
	return v, nil
}
