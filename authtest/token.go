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
	DefaultSubject  = "user-1"
	DefaultClientID = "client-1"
	defaultScope    = "mcp:tools"
	DefaultTenant   = "tenant-a"
	// WrongIssuerURL is the "iss" set by [WrongIssuer].
	WrongIssuerURL = "https://wrong-issuer.example"
	// WrongAudienceURL is the "aud" set by [WrongAudience].
	WrongAudienceURL = "https://wrong-audience.example"
	// unknownKeyID is the "kid" set by [UnknownKID].
	unknownKeyID = "unknown-kid"
)

// TokenOption changes one property of a token minted by [Issuer.Token] or
// [Issuer.OpaqueToken]. Options apply in order; later ones win.
type TokenOption func(*tokenSpec)

type keyMode int

const (
	keyIssuer   keyMode = iota // the issuer's key for the algorithm
	keyUnknown                 // fresh key, kid "unknown-kid"
	keyWrong                   // fresh key, the real kid
	keyExplicit                // SignWith
)

type tokenSpec struct {
	now      time.Time
	claims   map[string]any
	header   map[string]any // extra protected headers; "typ" lives here
	alg      jose.SignatureAlgorithm
	kid      *string
	mode     keyMode
	key      jose.JSONWebKey
	unsigned bool
}

// WithSubject sets "sub".
func WithSubject(sub string) TokenOption { return WithClaim("sub", sub) }

// WithClientID sets "client_id" (RFC 9068 §2.2).
func WithClientID(id string) TokenOption { return WithClaim("client_id", id) }

// WithAudience sets "aud": a string for one audience, an array for several
// (and an empty array for none). Remove it with WithoutClaim("aud").
func WithAudience(aud ...string) TokenOption {
	if len(aud) == 1 {
		return WithClaim("aud", aud[0])
	}
	return WithClaim("aud", append([]string{}, aud...))
}

// WithScopes sets "scope" to the space-separated scopes (RFC 9068 §2.2.3,
// RFC 8693 §4.2); no scopes gives "".
func WithScopes(scopes ...string) TokenOption {
	return WithClaim("scope", strings.Join(scopes, " "))
}

// WithTenant sets the "tenant" claim.
func WithTenant(tenant string) TokenOption { return WithClaim("tenant", tenant) }

// WithClaim sets claim name to v (any JSON-encodable value), replacing the
// default, e.g. WithClaim("exp", t.Unix()) for a NumericDate. A nil v
// deletes the claim.
func WithClaim(name string, v any) TokenOption {
	return func(s *tokenSpec) {
		if v == nil {
			delete(s.claims, name)
			return
		}
		s.claims[name] = v
	}
}

// WithoutClaim deletes claim name, e.g. WithoutClaim("exp").
func WithoutClaim(name string) TokenOption { return WithClaim(name, nil) }

// Expired makes the token expired an hour ago: exp = now-1h and
// iat = nbf = now-2h.
func Expired() TokenOption {
	return func(s *tokenSpec) {
		s.claims["exp"] = s.now.Add(-time.Hour).Unix()
		s.claims["iat"] = s.now.Add(-2 * time.Hour).Unix()
		s.claims["nbf"] = s.now.Add(-2 * time.Hour).Unix()
	}
}

// NotYetValid makes the token valid only from an hour from now:
// nbf = now+1h and exp = now+2h (iat stays now).
func NotYetValid() TokenOption {
	return func(s *tokenSpec) {
		s.claims["nbf"] = s.now.Add(time.Hour).Unix()
		s.claims["exp"] = s.now.Add(2 * time.Hour).Unix()
	}
}

// WrongAudience sets "aud" to [WrongAudienceURL].
func WrongAudience() TokenOption { return WithClaim("aud", WrongAudienceURL) }

// WrongIssuer sets "iss" to [WrongIssuerURL]. The token is still signed with
// the issuer's real key.
func WrongIssuer() TokenOption { return WithClaim("iss", WrongIssuerURL) }

// WithType sets the JOSE "typ" header (default "at+jwt", RFC 9068 §2.1),
// e.g. WithType("JWT").
func WithType(typ string) TokenOption { return WithHeader("typ", typ) }

// WithAlgorithm signs with alg instead of ES256. The key is the issuer's
// key for alg: ES256 → the current signing key, RS256 → [KIDRS256],
// EdDSA → [KIDEdDSA], or the newest private key added with [Issuer.AddKey]
// whose "alg" is alg. Without one, RS384/RS512/PS* sign with the RS256 key
// (a key whose JWK "alg" does not match the header), and HS256/384/512 sign
// with the PEM of the RS256 public key as HMAC secret under kid
// [KIDRS256] (the RS256→HS256 confusion attack). Other algorithms fail the
// test unless a key for them was added.
func WithAlgorithm(alg jose.SignatureAlgorithm) TokenOption {
	return func(s *tokenSpec) { s.alg = alg }
}

// UnknownKID signs with a fresh key of the token's algorithm that the JWKS
// does not contain, under kid "unknown-kid".
func UnknownKID() TokenOption { return func(s *tokenSpec) { s.mode = keyUnknown } }

// WrongKey signs with a fresh key of the token's algorithm but keeps the
// kid of the issuer key that would have signed it, so the kid resolves and
// the signature fails.
func WrongKey() TokenOption { return func(s *tokenSpec) { s.mode = keyWrong } }

// SignWith signs with the private key k (for example from [GenerateKey],
// published or not with [Issuer.AddKey]). The header carries k.KeyID and,
// unless [WithAlgorithm] is also given, alg k.Algorithm.
func SignWith(k jose.JSONWebKey) TokenOption {
	return func(s *tokenSpec) { s.mode, s.key = keyExplicit, k }
}

// WithKID sets the "kid" header without changing the signing key; "" omits
// the header.
func WithKID(kid string) TokenOption { return func(s *tokenSpec) { s.kid = &kid } }

// WithHeader sets an extra protected header, e.g. WithHeader("jku", url) or
// WithHeader("crit", []string{"exp"}). A nil v removes it. Headers set here
// are written last, so WithHeader("alg", "none") produces a header that
// contradicts the real signature algorithm; use [Unsigned] or [RawToken] for
// an actually unsigned token.
func WithHeader(name string, v any) TokenOption {
	return func(s *tokenSpec) {
		if v == nil {
			delete(s.header, name)
			return
		}
		s.header[name] = v
	}
}

// Unsigned produces an unsecured JWT (RFC 7519 §6): header alg "none", no
// kid unless [WithKID] is given, and an empty signature.
func Unsigned() TokenOption { return func(s *tokenSpec) { s.unsigned = true } }

// newSpec returns the valid-by-default token spec with opts applied.
func (i *Issuer) newSpec(opts []TokenOption) *tokenSpec {
	now := i.Now()
	s := &tokenSpec{
		now: now,
		claims: map[string]any{
			"iss":       i.url,
			"sub":       DefaultSubject,
			"aud":       i.cfg.Audience,
			"client_id": DefaultClientID,
			"jti":       randomHex(16),
			"iat":       now.Unix(),
			"nbf":       now.Unix(),
			"exp":       now.Add(time.Hour).Unix(),
			"scope":     defaultScope,
			"tenant":    DefaultTenant,
		},
		header: map[string]any{"typ": "at+jwt"},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Token mints a JWT access token (RFC 9068) that is valid by default for
// this issuer at [Issuer.Now]:
//
//	header: typ "at+jwt", alg ES256, kid [Issuer.SigningKID]
//	claims: iss [Issuer.URL], sub "user-1", aud [Issuer.Audience],
//	        client_id "client-1", jti random, iat = nbf = now,
//	        exp = now+1h, scope "mcp:tools", tenant "tenant-a"
//
// Each option breaks or changes one property. The token is remembered for
// the introspection endpoint. Token calls t.Fatal if it cannot sign.
func (i *Issuer) Token(t testing.TB, opts ...TokenOption) string {
	t.Helper()
	s := i.newSpec(opts)
	raw, err := i.sign(s)
	if err != nil {
		t.Fatalf("authtest: minting token: %s", err.Error())
	}
	i.mu.Lock()
	i.issued[raw] = maps.Clone(s.claims)
	i.mu.Unlock()
	return raw
}

func (i *Issuer) sign(s *tokenSpec) (string, error) {
	alg := s.alg
	if alg == "" && s.mode == keyExplicit {
		alg = jose.SignatureAlgorithm(s.key.Algorithm)
	}
	if alg == "" {
		alg = jose.ES256
	}
	payload, err := json.Marshal(s.claims)
	if err != nil {
		return "", err
	}
	if s.unsigned {
		h := maps.Clone(s.header)
		h["alg"] = "none"
		if s.kid != nil && *s.kid != "" {
			h["kid"] = *s.kid
		}
		hb, err := json.Marshal(h)
		if err != nil {
			return "", err
		}
		return RawToken(hb, payload, nil), nil
	}
	var key any
	var kid string
	switch s.mode {
	case keyExplicit:
		key, kid = s.key.Key, s.key.KeyID
	case keyUnknown:
		fresh, err := generateKey(alg, "", 0)
		if err != nil {
			return "", err
		}
		key, kid = fresh.Key, unknownKeyID
	default:
		key, kid, err = i.signingKey(alg)
		if err != nil {
			return "", err
		}
		if s.mode == keyWrong {
			fresh, err := generateKey(alg, "", 0)
			if err != nil {
				return "", err
			}
			key = fresh.Key
		}
	}
	if s.kid != nil {
		kid = *s.kid
	}
	return signCompact(alg, key, kid, s.header, payload)
}

// signCompact signs payload and returns the JWS compact serialization. kid
// goes in the protected header unless empty; header entries are added last
// and may override "alg" and "kid".
func signCompact(alg jose.SignatureAlgorithm, key any, kid string, header map[string]any, payload []byte) (string, error) {
	opts := &jose.SignerOptions{}
	if kid != "" {
		opts.WithHeader("kid", kid)
	}
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

// RawToken joins the base64url (unpadded) encodings of header, payload and
// signature with dots, for hand-assembling hostile tokens, e.g.
// RawToken([]byte(`{"alg":"none"}`), []byte(`{"sub":"x"}`), nil).
func RawToken(header, payload, signature []byte) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString(signature)
}

// Signer signs arbitrary JWTs with one key, for tests that need no
// [Issuer]. Create it with [NewSigner] or [NewSignerFromKey].
type Signer struct {
	key jose.JSONWebKey // private
}

// NewSigner returns a Signer with a fresh key for alg (see [GenerateKey] for
// the supported algorithms) and a random kid. It panics on an unsupported
// algorithm.
func NewSigner(alg jose.SignatureAlgorithm) *Signer {
	return &Signer{key: GenerateKey(alg, "signer-"+randomHex(4))}
}

// NewSignerFromKey returns a Signer for the private key k; k.Algorithm is
// the signing algorithm and k.KeyID the default kid. It panics if k is
// public or has no algorithm.
func NewSignerFromKey(k jose.JSONWebKey) *Signer {
	if k.Algorithm == "" || k.IsPublic() {
		panic("authtest: NewSignerFromKey needs a private key with an algorithm")
	}
	return &Signer{key: k}
}

func isSymmetric(k jose.JSONWebKey) bool { _, ok := k.Key.([]byte); return ok }

// Sign returns a compact JWS over the JSON encoding of claims. The protected
// header is alg and the signer's kid, then every header entry (which may
// override them; "kid": nil or "" omits the kid). No "typ" is added: pass
// {"typ": "at+jwt"} for an RFC 9068 token. Sign calls t.Fatal on failure.
func (s *Signer) Sign(t testing.TB, header map[string]any, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("authtest: encoding claims: %s", err.Error())
	}
	kid := s.key.KeyID
	extra := map[string]any{}
	for k, v := range header {
		switch str, isString := v.(string); {
		case k == "kid" && (v == nil || isString):
			kid = str
		case v != nil:
			extra[k] = v
		}
	}
	raw, err := signCompact(jose.SignatureAlgorithm(s.key.Algorithm), s.key.Key, kid, extra, payload)
	if err != nil {
		t.Fatalf("authtest: %s", err.Error())
	}
	return raw
}

// PublicJWK returns the verification key, with kid, "alg" and use "sig".
// For HMAC signers it is the secret itself.
func (s *Signer) PublicJWK() jose.JSONWebKey {
	if isSymmetric(s.key) {
		return s.key
	}
	return s.key.Public()
}

// Algorithm returns the signing algorithm.
func (s *Signer) Algorithm() jose.SignatureAlgorithm {
	return jose.SignatureAlgorithm(s.key.Algorithm)
}
