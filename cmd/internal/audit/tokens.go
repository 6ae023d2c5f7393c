package audit

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-json-experiment/json"

	"github.com/mcpguard/mcpguard/challenge"
)

// oversizedPad is the padding claim of the oversized token: the token is
// about 44 KiB, larger than any real access token and under the 64 KiB
// header limits of common servers, so that it reaches the token check.
const oversizedPad = 32 << 10

// forged is one token the server must refuse.
type forged struct {
	id    string
	label string
	token string
	// sizeOK lists statuses besides 401 that count as a refusal.
	sizeOK []int
}

// forger builds forged tokens aimed at the endpoint.
type forger struct {
	now      time.Time
	issuer   string
	audience string
	scope    string
	kid      string // the real key's kid, if known
	key      *ecdsa.PrivateKey
}

// claims returns the claims of a plausible access token (RFC 9068 §2.2).
func (f *forger) claims(mod func(map[string]any)) map[string]any {
	jti := make([]byte, 12)
	_, _ = rand.Read(jti)
	c := map[string]any{
		"iss":       f.issuer,
		"aud":       f.audience,
		"sub":       "mcpguard-audit",
		"client_id": "mcpguard-audit",
		"iat":       f.now.Unix(),
		"nbf":       f.now.Add(-time.Minute).Unix(),
		"exp":       f.now.Add(5 * time.Minute).Unix(),
		"jti":       hex.EncodeToString(jti),
	}
	if f.scope != "" {
		c["scope"] = f.scope
	}
	if mod != nil {
		mod(c)
	}
	return c
}

// sign signs claims with go-jose (typ at+jwt, kid as given).
func sign(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) (string, error) {
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		return "", err
	}
	return jwt.Signed(s).Claims(claims).Serialize()
}

// unsigned returns an alg:none JWT (RFC 7519 §6): no signature is needed,
// so it is assembled from its two encoded parts.
func unsigned(kid string, claims map[string]any) (string, error) {
	hdr := map[string]any{"alg": "none", "typ": "at+jwt"}
	if kid != "" {
		hdr["kid"] = kid
	}
	h, err := json.Marshal(hdr, json.Deterministic(true))
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(claims, json.Deterministic(true))
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + ".", nil
}

// forgeAll builds the forged tokens. pub, if not nil, is the authorization
// server's public key: the HS256 token uses its PEM encoding as the HMAC
// secret, the classic algorithm-confusion attack (RFC 8725 §2.1).
func (f *forger) forgeAll(pub any) ([]forged, error) {
	kid := f.kid
	if kid == "" {
		kid = "mcpguard-audit"
	}
	if pub == nil {
		pub = &f.key.PublicKey
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	var out []forged
	add := func(id, label, tok string, err error, sizeOK ...int) error {
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		out = append(out, forged{id: id, label: label, token: tok, sizeOK: sizeOK})
		return nil
	}
	none, err := unsigned(kid, f.claims(nil))
	if err := add(TOKAlgNone, "forged alg:none", none, err); err != nil {
		return nil, err
	}
	unknown, err := sign(jose.ES256, f.key, "mcpguard-audit-unknown-key", f.claims(nil))
	if err := add(TOKUnknownKey, "forged unknown-key", unknown, err); err != nil {
		return nil, err
	}
	expired, err := sign(jose.ES256, f.key, kid, f.claims(func(c map[string]any) {
		c["iat"] = f.now.Add(-2 * time.Hour).Unix()
		c["nbf"] = f.now.Add(-2 * time.Hour).Unix()
		c["exp"] = f.now.Add(-time.Hour).Unix()
	}))
	if err := add(TOKExpired, "forged expired", expired, err); err != nil {
		return nil, err
	}
	wrongAud, err := sign(jose.ES256, f.key, kid, f.claims(func(c map[string]any) {
		c["aud"] = "https://" + spoofHost + "/other-resource"
	}))
	if err := add(TOKWrongAud, "forged wrong-audience", wrongAud, err); err != nil {
		return nil, err
	}
	hs, err := sign(jose.HS256, pemKey, kid, f.claims(nil))
	if err := add(TOKHS256PubKey, "forged HS256-public-key", hs, err); err != nil {
		return nil, err
	}
	big, err := sign(jose.ES256, f.key, kid, f.claims(func(c map[string]any) {
		c["pad"] = strings.Repeat("A", oversizedPad)
	}))
	if err := add(TOKOversized, "forged oversized", big, err,
		http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge); err != nil {
		return nil, err
	}
	return out, nil
}

// checkTokens sends each forged token and judges the TOK-* checks.
func (a *Auditor) checkTokens(ctx context.Context) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return
	}
	f := &forger{now: a.cfg.Now(), issuer: a.issuer, audience: a.endpoint.String(), key: key}
	if f.issuer == "" {
		f.issuer = "https://" + spoofHost
	}
	if a.prm != nil {
		f.scope = strings.Join(a.prm.ScopesSupported, " ")
	}
	if a.challenge401 != nil && len(a.challenge401.Scope) > 0 {
		f.scope = strings.Join(a.challenge401.Scope, " ")
	}
	var pub any
	if a.asKey != nil {
		f.kid, pub = a.asKey.kid, a.asKey.pub
	}
	tokens, err := f.forgeAll(pub)
	if err != nil {
		a.fail(TOKGarbage, "could not build the forged tokens: "+err.Error())
		return
	}
	tokens = append([]forged{{id: TOKGarbage, label: "garbage", token: "mcpguard-audit-garbage-token"}}, tokens...)
	for _, t := range tokens {
		a.secret(t.token, t.label)
		c := a.probe()
		c.token = t.token
		x, _ := a.send(ctx, c)
		a.noteRefusal(x)
		ev := a.evidence(x)
		b, _ := bearerOf(x)
		switch {
		case x.status == 0:
			a.fail(t.id, "no answer within the timeout", ev)
		case x.status == http.StatusUnauthorized && b == nil:
			a.fail(t.id, "401 without a Bearer challenge (RFC 6750 §3 requires WWW-Authenticate)", ev)
		case x.status == http.StatusUnauthorized:
			a.pass(t.id, "", ev)
		case slices.Contains(t.sizeOK, x.status):
			a.pass(t.id, fmt.Sprintf("refused with %d", x.status), ev)
		case x.is2xx():
			a.fail(t.id, "the token was ACCEPTED", ev)
		default:
			a.fail(t.id, fmt.Sprintf("got %d, want 401", x.status), ev)
		}
		if x.status == http.StatusUnauthorized && b != nil {
			a.judge(TOKErrorCode, b.Error == challenge.InvalidToken, "",
				t.label+": error is "+quote(string(b.Error))+", want \"invalid_token\"", ev)
		}
	}
}
