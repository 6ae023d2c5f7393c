package devidp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Token types and grant of RFC 8693 and the ID-JAG draft.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	typIDJAG           = "oauth-id-jag+jwt"
)

// Bounds.
const (
	maxFormBytes    = 16 << 10
	idTokenLifetime = time.Hour
)

// ErrConfig is returned by [New] for an invalid Config.
var ErrConfig = errors.New("devidp: invalid config")

// Client is a client of the identity provider allowed the token exchange.
type Client struct {
	// ID and Secret authenticate the exchange (HTTP Basic, each
	// form-urlencoded first, or client_id and client_secret in the body).
	// An empty Secret is a public client: client_id alone.
	ID, Secret string
	// ResourceClientID is the client's ID at the MCP authorization server,
	// the ID-JAG's client_id (the draft's §5: the IdP maps its client to
	// the resource server's). Empty means ID.
	ResourceClientID string
}

// Config configures [New].
type Config struct {
	// Issuer is the identity provider's issuer identifier, e.g.
	// "http://127.0.0.1:9100": https, or http on a loopback host, without
	// a trailing "/". Required.
	Issuer string
	// Clients are the clients allowed the token exchange. Required,
	// non-empty.
	Clients []Client
	// IDJAGLifetime is how long an ID-JAG is valid. Zero means 5 minutes
	// (the extension's example).
	IDJAGLifetime time.Duration
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
}

// IdP is the development identity provider, an http.Handler safe for
// concurrent use.
type IdP struct {
	cfg    Config
	key    *ecdsa.PrivateKey
	pub    jose.JSONWebKey
	signer jose.Signer // ID tokens and workload JWTs (typ JWT)
	jag    jose.Signer // ID-JAGs (typ oauth-id-jag+jwt)
	meta   []byte
	jwks   []byte
}

// New returns an IdP with a fresh ES256 key.
func New(cfg Config) (*IdP, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.HasSuffix(cfg.Issuer, "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: Issuer must be an absolute http(s) URL without trailing slash, query or fragment", ErrConfig)
	}
	if len(cfg.Clients) == 0 {
		return nil, fmt.Errorf("%w: Clients is required", ErrConfig)
	}
	for _, c := range cfg.Clients {
		if c.ID == "" {
			return nil, fmt.Errorf("%w: a client without ID", ErrConfig)
		}
	}
	if cfg.IDJAGLifetime < 0 {
		return nil, fmt.Errorf("%w: negative IDJAGLifetime", ErrConfig)
	}
	if cfg.IDJAGLifetime == 0 {
		cfg.IDJAGLifetime = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Clients = slices.Clone(cfg.Clients)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	p := &IdP{cfg: cfg, key: key, pub: jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(jose.ES256), Use: "sig"}}
	tp, err := p.pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	p.pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	sk := jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: p.pub.KeyID}}
	if p.signer, err = jose.NewSigner(sk, (&jose.SignerOptions{}).WithType("JWT")); err != nil {
		return nil, err
	}
	if p.jag, err = jose.NewSigner(sk, (&jose.SignerOptions{}).WithType(typIDJAG)); err != nil {
		return nil, err
	}
	p.meta, _ = json.Marshal(map[string]any{
		"issuer": cfg.Issuer, "token_endpoint": cfg.Issuer + "/token", "jwks_uri": cfg.Issuer + "/jwks",
		"grant_types_supported":                 []string{grantTokenExchange},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
	})
	p.jwks, _ = json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{p.pub}})
	return p, nil
}

// Issuer returns the issuer identifier.
func (p *IdP) Issuer() string { return p.cfg.Issuer }

// PublicKeys returns the public signing key, as served at /jwks.
func (p *IdP) PublicKeys() []jose.JSONWebKey { return []jose.JSONWebKey{p.pub} }

// IDToken signs an OpenID Connect ID token for subject with audience
// clientID (the client's ID at this IdP), valid for an hour: what single
// sign-on gives the MCP client. Development only: nobody logs in.
func (p *IdP) IDToken(subject, clientID string) (string, error) {
	now := p.cfg.Now()
	return jwt.Signed(p.signer).Claims(jwt.Claims{
		Issuer: p.cfg.Issuer, Subject: subject, Audience: jwt.Audience{clientID}, ID: newID(),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(idTokenLifetime)),
	}).Serialize()
}

// WorkloadJWT signs a workload JWT (typ JWT: iss, sub, aud, jti, iat,
// exp) for subject, with audience (the MCP authorization server's issuer
// or token endpoint), valid for lifetime: what a workload platform (a
// Kubernetes projected token, a SPIFFE JWT-SVID) gives a workload.
func (p *IdP) WorkloadJWT(subject, audience string, lifetime time.Duration) (string, error) {
	now := p.cfg.Now()
	return jwt.Signed(p.signer).Claims(jwt.Claims{
		Issuer: p.cfg.Issuer, Subject: subject, Audience: jwt.Audience{audience}, ID: newID(),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(lifetime)),
	}).Serialize()
}

// ServeHTTP serves /.well-known/openid-configuration, /jwks and /token.
func (p *IdP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, _ := url.Parse(p.cfg.Issuer)
	base := strings.TrimSuffix(u.Path, "/")
	switch r.URL.Path {
	case "/.well-known/openid-configuration" + base, base + "/.well-known/openid-configuration":
		writeRaw(w, p.meta)
	case base + "/jwks":
		writeRaw(w, p.jwks)
	case base + "/token":
		p.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

// oauthError is an RFC 6749 §5.2 error body.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

// token is the RFC 8693 token exchange: one of this IdP's ID tokens for
// an ID-JAG for the requested audience and resource.
func (p *IdP) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	fail := func(status int, code, desc string) { writeJSON(w, status, oauthError{code, desc}) }
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		fail(http.StatusMethodNotAllowed, "invalid_request", "POST only")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		fail(http.StatusBadRequest, "invalid_request", "form-encoded body required")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", "malformed body")
		return
	}
	f := r.PostForm
	for k, v := range f {
		if len(v) != 1 {
			fail(http.StatusBadRequest, "invalid_request", "repeated parameter "+k)
			return
		}
	}
	client, ok := p.authenticate(r, f)
	if !ok {
		if r.Header.Get("Authorization") != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="devidp"`)
		}
		fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	switch {
	case f.Get("grant_type") != grantTokenExchange:
		fail(http.StatusBadRequest, "unsupported_grant_type", "token exchange only")
		return
	case f.Get("requested_token_type") != tokenTypeIDJAG:
		fail(http.StatusBadRequest, "invalid_request", "requested_token_type must be the ID-JAG type")
		return
	case f.Get("subject_token_type") != tokenTypeIDToken:
		fail(http.StatusBadRequest, "invalid_request", "subject_token_type must be the ID token type")
		return
	case f.Get("audience") == "":
		fail(http.StatusBadRequest, "invalid_request", "audience is required")
		return
	}
	sub, ok := p.checkIDToken(f.Get("subject_token"), client.ID)
	if !ok {
		fail(http.StatusBadRequest, "invalid_grant", "the subject token is not a valid ID token of this IdP for this client")
		return
	}
	rc := client.ResourceClientID
	if rc == "" {
		rc = client.ID
	}
	now := p.cfg.Now()
	claims := map[string]any{
		"iss": p.cfg.Issuer, "sub": sub, "aud": f.Get("audience"), "client_id": rc, "jti": newID(),
		"iat": now.Unix(), "exp": now.Add(p.cfg.IDJAGLifetime).Unix(),
	}
	if res := f.Get("resource"); res != "" {
		claims["resource"] = res
	}
	if sc := f.Get("scope"); sc != "" {
		claims["scope"] = sc
	}
	jag, err := jwt.Signed(p.jag).Claims(claims).Serialize()
	if err != nil {
		fail(http.StatusInternalServerError, "server_error", "could not sign")
		return
	}
	resp := map[string]any{"access_token": jag, "issued_token_type": tokenTypeIDJAG, "token_type": "N_A",
		"expires_in": int64(p.cfg.IDJAGLifetime.Seconds())}
	if sc := f.Get("scope"); sc != "" {
		resp["scope"] = sc
	}
	writeJSON(w, http.StatusOK, resp)
}

// authenticate finds the client of the request (RFC 6749 §2.3.1).
func (p *IdP) authenticate(r *http.Request, f url.Values) (Client, bool) {
	id, secret := f.Get("client_id"), f.Get("client_secret")
	if u, pw, ok := r.BasicAuth(); ok {
		var e1, e2 error
		if id, e1 = url.QueryUnescape(u); e1 != nil {
			return Client{}, false
		}
		if secret, e2 = url.QueryUnescape(pw); e2 != nil {
			return Client{}, false
		}
	} else if r.Header.Get("Authorization") != "" {
		return Client{}, false
	}
	for _, c := range p.cfg.Clients {
		if c.ID == id && c.Secret == secret {
			return c, true
		}
	}
	return Client{}, false
}

// checkIDToken verifies one of this IdP's ID tokens issued to clientID
// and returns its subject.
func (p *IdP) checkIDToken(raw, clientID string) (string, bool) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return "", false
	}
	var c jwt.Claims
	if err := tok.Claims(&p.key.PublicKey, &c); err != nil {
		return "", false
	}
	err = c.ValidateWithLeeway(jwt.Expected{Issuer: p.cfg.Issuer, AnyAudience: jwt.Audience{clientID}, Time: p.cfg.Now()}, 0)
	if err != nil || c.Subject == "" || c.Expiry == nil {
		return "", false
	}
	return c.Subject, true
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
