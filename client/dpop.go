package client

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// DPoPKey holds the private key a client proves possession of with DPoP
// (RFC 9449): it signs one proof per request, remembers the last server
// nonce per origin (§8, §9) and gives the authorization server's token
// endpoint proofs too ([DPoPKey.TokenTransport]), so that the tokens it
// issues are bound to this key. Set it as [Config.DPoP]. It is safe for
// concurrent use.
type DPoPKey struct {
	signer jose.Signer
	jkt    string
	now    func() time.Time

	mu     sync.Mutex
	nonces map[string]string // origin -> last DPoP-Nonce
}

// NewDPoPKey returns a DPoPKey for key, an *ecdsa.PrivateKey (P-256, P-384
// or P-521: ES256/384/512), an *rsa.PrivateKey of 2048 bits or more (PS256)
// or an ed25519.PrivateKey (EdDSA). A nil key generates a P-256 key (ES256).
// now is the clock of the proofs' iat; nil means time.Now.
func NewDPoPKey(key crypto.Signer, now func() time.Time) (*DPoPKey, error) {
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("%w: generate key: %w", errDPoP, err)
		}
		key = k
	}
	var alg jose.SignatureAlgorithm
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg = jose.ES256
		case elliptic.P384():
			alg = jose.ES384
		case elliptic.P521():
			alg = jose.ES512
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() >= 2048 {
			alg = jose.PS256
		}
	case ed25519.PrivateKey:
		alg = jose.EdDSA
	}
	if alg == "" {
		return nil, fmt.Errorf("%w: unsupported key type %T", errDPoP, key)
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDPoP, err)
	}
	pub := jose.JSONWebKey{Key: key.Public()}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDPoP, err)
	}
	if now == nil {
		now = time.Now
	}
	return &DPoPKey{signer: s, jkt: base64.RawURLEncoding.EncodeToString(tp), now: now, nonces: map[string]string{}}, nil
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of the public key,
// base64url: the cnf.jkt of tokens bound to it (RFC 9449 §6.1), and the
// dpop_jkt authorization request parameter (§10).
func (k *DPoPKey) Thumbprint() string { return k.jkt }

// Proof returns a DPoP proof for a request (RFC 9449 §4.2): typ dpop+jwt,
// the public key in jwk, a random jti, htm method, htu target without
// query and fragment, iat now, ath the hash of accessToken when it is not
// empty, and the last nonce the origin of target sent, if any.
func (k *DPoPKey) Proof(method, target, accessToken string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || !u.IsAbs() {
		return "", fmt.Errorf("%w: target is not an absolute URL", errDPoP)
	}
	htu := *u
	htu.RawQuery, htu.ForceQuery, htu.Fragment, htu.RawFragment, htu.User = "", false, "", "", nil
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := map[string]any{
		"jti": base64.RawURLEncoding.EncodeToString(jti),
		"htm": method,
		"htu": htu.String(),
		"iat": k.now().Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		c["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if n := k.nonce(originKey(u)); n != "" {
		c["nonce"] = n
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errDPoP, err)
	}
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("%w: sign: %w", errDPoP, err)
	}
	return jws.CompactSerialize()
}

func originKey(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (k *DPoPKey) nonce(origin string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nonces[origin]
}

// noteNonce records the DPoP-Nonce of resp, if any, for its origin. It
// reports whether the nonce changed.
func (k *DPoPKey) noteNonce(u *url.URL, resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" || len(n) > 1024 {
		return false
	}
	o := originKey(u)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.nonces) >= 64 {
		clear(k.nonces) // a bound, not a cache policy: nonces are re-sent on demand
	}
	changed := k.nonces[o] != n
	k.nonces[o] = n
	return changed
}

// TokenTransport returns an http.RoundTripper for the authorization
// server's token endpoint (RFC 9449 §5): it adds a DPoP proof (without
// ath) to every POST and, when the server answers 400 use_dpop_nonce with
// a DPoP-Nonce (§8), resends the request once with the nonce. base nil
// means http.DefaultTransport. Use it as the Transport of the
// oauth2.HTTPClient of the token exchange.
func (k *DPoPKey) TokenTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &tokenTransport{k: k, base: base}
}

type tokenTransport struct {
	k    *DPoPKey
	base http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost {
		return t.base.RoundTrip(req)
	}
	body, err := newReplay(req)
	if err != nil {
		return nil, fmt.Errorf("client: read request body: %w", err)
	}
	defer body.close()
	for attempt := 0; ; attempt++ {
		r2 := req.Clone(req.Context())
		proof, err := t.k.Proof(req.Method, req.URL.String(), "")
		if err != nil {
			return nil, err
		}
		r2.Header.Set("DPoP", proof)
		if err := body.apply(r2); err != nil {
			return nil, fmt.Errorf("client: replay request body: %w", err)
		}
		resp, err := t.base.RoundTrip(r2)
		if err != nil {
			return nil, err
		}
		changed := t.k.noteNonce(req.URL, resp)
		if attempt > 0 || !changed || resp.StatusCode != http.StatusBadRequest || !body.replayable || !isUseNonceBody(resp) {
			return resp, nil
		}
		discard(resp)
	}
}

// isUseNonceBody reports whether a token endpoint error response is
// use_dpop_nonce (RFC 9449 §8), keeping the body readable.
func isUseNonceBody(resp *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var e struct {
		Error string `json:"error"`
	}
	return strictjson.Unmarshal(b, &e) == nil && e.Error == "use_dpop_nonce"
}

// isDPoPToken reports whether tok is to be sent with the DPoP scheme: its
// token_type is DPoP (RFC 9449 §5).
func isDPoPToken(tok *oauth2.Token) bool { return strings.EqualFold(tok.TokenType, "DPoP") }

// authorize sets the Authorization (and DPoP) headers of r2 for tok.
func (t *Transport) authorize(r2 *http.Request, tok *oauth2.Token) error {
	if t.cfg.DPoP == nil || !isDPoPToken(tok) {
		r2.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return nil
	}
	proof, err := t.cfg.DPoP.Proof(r2.Method, r2.URL.String(), tok.AccessToken)
	if err != nil {
		return err
	}
	r2.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	r2.Header.Set("DPoP", proof)
	return nil
}

// useNonce reports whether resp asks for a (new) DPoP nonce (RFC 9449 §9:
// 401 with a DPoP challenge error="use_dpop_nonce"), recording the nonce.
func (t *Transport) useNonce(r2 *http.Request, resp *http.Response) bool {
	if t.cfg.DPoP == nil || r2.Header.Get("DPoP") == "" {
		return false
	}
	changed := t.cfg.DPoP.noteNonce(r2.URL, resp)
	if !changed || resp.StatusCode != http.StatusUnauthorized {
		return false
	}
	cs, err := challenge.ParseAll(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "DPoP") && c.Error == "use_dpop_nonce" {
			return true
		}
	}
	return false
}
