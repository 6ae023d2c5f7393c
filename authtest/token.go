package authtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Defaults of a token minted by [Issuer.Token] (RFC 9068 §2.2).
const (
	defaultSubject  = "user-1"
	defaultClientID = "client-1"
	defaultScope    = "mcp:tools"
	defaultTenant   = "tenant-a"
	defaultLifetime = time.Hour
	// wrongIssuerURL is the "iss" of [WrongIssuer].
	wrongIssuerURL = "https://wrong-issuer.example"
	// wrongAudienceURL is the "aud" of [WrongAudience].
	wrongAudienceURL = "https://wrong-audience.example"
)

// Token describes a token for [Issuer.Token]. The zero value is a valid
// RFC 9068 JWT access token for the issuer, its audience and its clock:
//
//	header: typ "at+jwt", alg ES256, kid "es256-1" (the issuer's ES256 key)
//	claims: iss [Issuer.URL], sub "user-1", aud [Issuer.Audience],
//	        client_id "client-1", jti random, iat = nbf = now,
//	        exp = now+1h, scope "mcp:tools", tenant "tenant-a"
//
// Each field changes one property; its zero value keeps the default. The
// classic bad tokens have constructors: [Expired], [WrongAudience],
// [WrongIssuer], [InsufficientScope], [NoKID] and [AlgNone]; set further
// fields on what they return to combine them.
type Token struct {
	// Subject is "sub". Empty means "user-1".
	Subject string
	// ClientID is "client_id" (RFC 9068 §2.2). Empty means "client-1".
	ClientID string
	// Tenant is the "tenant" claim. Empty means "tenant-a".
	Tenant string
	// Issuer is "iss". Empty means [Issuer.URL]; the token is signed with
	// the issuer's key whatever Issuer says.
	Issuer string
	// Audience is "aud": one value is written as a string, several as an
	// array, and a non-nil empty slice as an empty array. Nil means
	// [Issuer.Audience]. Remove the claim with Claims{"aud": nil}.
	Audience []string
	// Scopes is "scope", space-separated (RFC 9068 §2.2.3). Nil means
	// "mcp:tools"; a non-nil empty slice means "".
	Scopes []string
	// Age is how long ago the token was issued: iat = now−Age, now being
	// [Issuer.Now]. Zero means now; a negative Age issues the token in the
	// future.
	Age time.Duration
	// NotBefore is how long after iat the token becomes valid:
	// nbf = iat+NotBefore. Zero means nbf = iat.
	NotBefore time.Duration
	// Lifetime is how long after iat the token expires: exp = iat+Lifetime.
	// Zero means an hour.
	Lifetime time.Duration

	// Alg is the signature algorithm. Empty means Key.Algorithm when Key is
	// set, else ES256. The key is the issuer's key for Alg: the newest
	// private key added for it ([Issuer.AddKey]), which is "es256-1",
	// "rs256-1" or "eddsa-1" until another is added. Without one,
	// RS384/RS512/PS* sign with the RS256 key (a key whose JWK "alg" does
	// not match the header), and HS256/384/512 sign with the PEM of the
	// RS256 public key as HMAC secret under kid "rs256-1" (the RS256→HS256
	// confusion attack). Other algorithms fail the test. "none" makes an
	// unsecured JWT (RFC 7519 §6): no signature and no kid unless KID is
	// set.
	Alg jose.SignatureAlgorithm
	// Key, when its Key member is set, signs instead of the issuer's key
	// (for example a private key from [GenerateKey], published or not with
	// [Issuer.AddKey]). The header carries Key.KeyID.
	Key jose.JSONWebKey
	// ForeignKey signs with a fresh key of the token's algorithm that the
	// JWKS does not contain, keeping the kid of the key it replaces: the kid
	// resolves and the signature fails. With KID "unknown-kid" the kid does
	// not resolve either.
	ForeignKey bool
	// KID is the "kid" header; the signing key does not change. Empty
	// means the signing key's kid. Omit the header with [NoKID].
	KID string
	// Typ is the "typ" header (RFC 9068 §2.1). Empty means "at+jwt";
	// remove it with Header{"typ": nil}.
	Typ string

	// Claims are set last, replacing the defaults and the fields above:
	// any JSON-encodable value, e.g. {"exp": t.Unix()} for a NumericDate.
	// A nil value deletes the claim.
	Claims map[string]any
	// Header are extra protected headers, written last (e.g. "jku",
	// "crit"). They may override "alg" and "kid": {"alg": "none"} makes a
	// header that contradicts the real signature; use Alg "none" for an
	// actually unsigned token. A nil value removes the header.
	Header map[string]any

	// Opaque makes [Issuer.Token] return a random opaque access token (not
	// a JWT) that the introspection endpoint knows, with the claims the JWT
	// would have carried; the header and key fields are ignored.
	Opaque bool
}

// Expired returns a token that expired an hour ago: exp = now−1h and
// iat = nbf = now−2h (Age 2h).
func Expired() Token { return Token{Age: 2 * time.Hour} }

// WrongAudience returns a token whose "aud" is
// "https://wrong-audience.example".
func WrongAudience() Token { return Token{Audience: []string{wrongAudienceURL}} }

// WrongIssuer returns a token whose "iss" is "https://wrong-issuer.example",
// still signed with the issuer's real key.
func WrongIssuer() Token { return Token{Issuer: wrongIssuerURL} }

// InsufficientScope returns a token with an empty "scope", so any scope a
// server requires is missing (403 insufficient_scope, RFC 6750 §3.1). Set
// Scopes on the result for a token with some scopes but not the required
// ones.
func InsufficientScope() Token { return Token{Scopes: []string{}} }

// NoKID returns a token signed with the issuer's key but without a "kid"
// header (RFC 7515 §4.1.4 makes it optional).
func NoKID() Token { return Token{Header: map[string]any{"kid": nil}} }

// AlgNone returns an unsecured JWT (RFC 7519 §6): header alg "none", no
// kid and an empty signature.
func AlgNone() Token { return Token{Alg: "none"} }

// claims returns the payload of tok at now: the defaults, then the fields,
// then tok.Claims.
func (i *Issuer) claims(tok Token, now time.Time) map[string]any {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	var aud any = i.Audience
	switch {
	case len(tok.Audience) == 1:
		aud = tok.Audience[0]
	case tok.Audience != nil:
		aud = append([]string{}, tok.Audience...)
	}
	scope := defaultScope
	if tok.Scopes != nil {
		scope = strings.Join(tok.Scopes, " ")
	}
	issued := now.Add(-tok.Age)
	lifetime := tok.Lifetime
	if lifetime == 0 {
		lifetime = defaultLifetime
	}
	c := map[string]any{
		"iss":       or(tok.Issuer, i.URL),
		"sub":       or(tok.Subject, defaultSubject),
		"aud":       aud,
		"client_id": or(tok.ClientID, defaultClientID),
		"jti":       randomHex(16),
		"iat":       issued.Unix(),
		"nbf":       issued.Add(tok.NotBefore).Unix(),
		"exp":       issued.Add(lifetime).Unix(),
		"scope":     scope,
		"tenant":    or(tok.Tenant, defaultTenant),
	}
	for k, v := range tok.Claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// Token mints the token tok describes, valid by default for this issuer at
// [Issuer.Now] (see [Token] for the defaults), and remembers it for the
// introspection endpoint. Token calls t.Fatal if it cannot sign.
func (i *Issuer) Token(t testing.TB, tok Token) string {
	t.Helper()
	claims := i.claims(tok, i.Now())
	raw := "opaque-" + randomHex(24)
	if !tok.Opaque {
		var err error
		if raw, err = i.sign(tok, claims); err != nil {
			t.Fatalf("authtest: minting token: %s", err.Error())
		}
	}
	i.mu.Lock()
	i.issued[raw] = claims
	i.mu.Unlock()
	return raw
}

func (i *Issuer) sign(tok Token, claims map[string]any) (string, error) {
	explicit := tok.Key.Key != nil
	alg := tok.Alg
	if alg == "" && explicit {
		alg = jose.SignatureAlgorithm(tok.Key.Algorithm)
	}
	if alg == "" {
		alg = jose.ES256
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	typ := tok.Typ
	if typ == "" {
		typ = "at+jwt"
	}
	header := map[string]any{"typ": typ}
	if alg == "none" {
		header["alg"] = "none"
		if tok.KID != "" {
			header["kid"] = tok.KID
		}
		applyHeader(header, tok.Header)
		hb, err := json.Marshal(header)
		if err != nil {
			return "", err
		}
		return rawToken(hb, payload, nil), nil
	}
	var key any
	var kid string
	switch {
	case explicit:
		key, kid = tok.Key.Key, tok.Key.KeyID
	case tok.ForeignKey:
		_, kid, _ = i.signingKey(alg) // the kid it impersonates, if any
	default:
		if key, kid, err = i.signingKey(alg); err != nil {
			return "", err
		}
	}
	if tok.ForeignKey {
		fresh, err := generateKey(alg, "", 0)
		if err != nil {
			return "", err
		}
		key = fresh.Key
	}
	if tok.KID != "" {
		kid = tok.KID
	}
	if kid != "" {
		header["kid"] = kid
	}
	applyHeader(header, tok.Header)
	return signCompact(alg, key, header, payload)
}

// applyHeader sets every entry of extra on h, deleting those whose value is
// nil.
func applyHeader(h, extra map[string]any) {
	for k, v := range extra {
		if v == nil {
			delete(h, k)
			continue
		}
		h[k] = v
	}
}

// signCompact signs payload and returns the JWS compact serialization with
// the protected header entries of header (which may override "alg").
func signCompact(alg jose.SignatureAlgorithm, key any, header map[string]any, payload []byte) (string, error) {
	opts := &jose.SignerOptions{}
	for k, v := range header {
		opts.WithHeader(jose.HeaderKey(k), v)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		return "", fmt.Errorf("authtest: %s signer: %w", alg, err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("authtest: signing with %s: %w", alg, err)
	}
	return jws.CompactSerialize()
}

// rawToken joins the base64url (unpadded) encodings of header, payload and
// signature with dots.
func rawToken(header, payload, signature []byte) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString(signature)
}

// cloneClaims copies a remembered claim set for an introspection answer.
func cloneClaims(c map[string]any) map[string]any { return maps.Clone(c) }
