package authtest_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpguard/mcpguard/authtest"
)

var allAlgs = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
}

type decoded struct {
	raw    string
	header map[string]any
	claims map[string]any
}

// decode splits raw without verifying it.
func decode(t *testing.T, raw string) decoded {
	t.Helper()
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments, want 3", len(parts))
	}
	d := decoded{raw: raw}
	for n, dst := range []*map[string]any{&d.header, &d.claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[n])
		if err != nil {
			t.Fatalf("segment %d: %s", n, err.Error())
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("segment %d: %s", n, err.Error())
		}
	}
	return d
}

// verify checks raw against the keys with its kid, with go-jose's jwt
// parser (compact only), and returns the verified claims.
func verify(t *testing.T, keys []jose.JSONWebKey, raw string) map[string]any {
	t.Helper()
	claims, err := tryVerify(keys, raw)
	if err != nil {
		t.Fatalf("verify: %s", err.Error())
	}
	return claims
}

func tryVerify(keys []jose.JSONWebKey, raw string) (map[string]any, error) {
	tok, err := jwt.ParseSigned(raw, allAlgs)
	if err != nil {
		return nil, err
	}
	set := jose.JSONWebKeySet{Keys: keys}
	var claims map[string]any
	err = tok.Claims(&set, &claims)
	return claims, err
}

func TestTokenDefaults(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Path: "/tenant1", Audience: "https://mcp.test/mcp"})
	raw := iss.Token(t, authtest.Token{})
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	h := tok.Headers[0]
	if h.Algorithm != "ES256" || h.KeyID != "es256-1" || h.ExtraHeaders["typ"] != "at+jwt" {
		t.Errorf("header = alg %s kid %s typ %v, want ES256 %s at+jwt", h.Algorithm, h.KeyID, h.ExtraHeaders["typ"], "es256-1")
	}
	var std jwt.Claims
	var extra struct {
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
		Tenant   string `json:"tenant"`
	}
	if err := tok.Claims(&jose.JSONWebKeySet{Keys: iss.Keys()}, &std, &extra); err != nil {
		t.Fatal(err)
	}
	now := iss.Now()
	err = std.Validate(jwt.Expected{Issuer: iss.URL, AnyAudience: jwt.Audience{"https://mcp.test/mcp"}, Time: now})
	if err != nil {
		t.Errorf("default token does not validate: %s", err.Error())
	}
	if std.Subject != "user-1" || extra.ClientID != "client-1" || extra.Scope != "mcp:tools" || extra.Tenant != "tenant-a" {
		t.Errorf("claims = sub %q client_id %q scope %q tenant %q", std.Subject, extra.ClientID, extra.Scope, extra.Tenant)
	}
	if len(std.ID) != 32 || !std.IssuedAt.Time().Equal(now) || !std.NotBefore.Time().Equal(now) || !std.Expiry.Time().Equal(now.Add(time.Hour)) {
		t.Errorf("jti %q iat %s nbf %s exp %s", std.ID, std.IssuedAt.Time(), std.NotBefore.Time(), std.Expiry.Time())
	}
	if d := decode(t, raw); d.claims["aud"] != "https://mcp.test/mcp" {
		t.Errorf("aud = %#v, want a single string", d.claims["aud"])
	}
	if other := decode(t, iss.Token(t, authtest.Token{})); other.claims["jti"] == decode(t, raw).claims["jti"] {
		t.Errorf("two tokens share jti %v", other.claims["jti"])
	}
}

func TestTokenFields(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	now := iss.Now()
	at := func(d time.Duration) float64 { return float64(now.Add(d).Unix()) }
	es384 := authtest.GenerateKey(jose.ES384, "es384-1")
	iss.AddKey(es384)
	outside := authtest.GenerateKey(jose.EdDSA, "outside")

	tests := []struct {
		name       string
		spec       authtest.Token
		wantHeader map[string]any // nil value: header absent
		wantClaims map[string]any // nil value: claim absent
		wantErr    error          // verification against iss.Keys(); nil => verifies
	}{
		{"subject", authtest.Token{Subject: "u2"}, nil, map[string]any{"sub": "u2"}, nil},
		{"client", authtest.Token{ClientID: "c2"}, nil, map[string]any{"client_id": "c2"}, nil},
		{"one audience", authtest.Token{Audience: []string{"a"}}, nil, map[string]any{"aud": "a"}, nil},
		{"audiences", authtest.Token{Audience: []string{"a", "b"}}, nil, map[string]any{"aud": []any{"a", "b"}}, nil},
		{"no audience", authtest.Token{Audience: []string{}}, nil, map[string]any{"aud": []any{}}, nil},
		{"scopes", authtest.Token{Scopes: []string{"a", "b"}}, nil, map[string]any{"scope": "a b"}, nil},
		{"tenant", authtest.Token{Tenant: "t2"}, nil, map[string]any{"tenant": "t2"}, nil},
		{"claim", authtest.Token{Claims: map[string]any{"scp": []string{"x"}, "sub": 7}}, nil,
			map[string]any{"scp": []any{"x"}, "sub": float64(7)}, nil},
		{"claim nil deletes", authtest.Token{Claims: map[string]any{"tenant": nil}}, nil, map[string]any{"tenant": nil}, nil},
		{"without claim", authtest.Token{Claims: map[string]any{"exp": nil}}, nil, map[string]any{"exp": nil}, nil},
		{"expiry", authtest.Token{Claims: map[string]any{"exp": now.Add(time.Minute).Unix()}}, nil, map[string]any{"exp": at(time.Minute)}, nil},
		{"zero expiry", authtest.Token{Claims: map[string]any{"exp": nil}}, nil, map[string]any{"exp": nil}, nil},
		{"issued at", authtest.Token{Claims: map[string]any{"iat": now.Add(time.Hour).Unix()}}, nil, map[string]any{"iat": at(time.Hour)}, nil},
		{"not before", authtest.Token{Claims: map[string]any{"nbf": now.Add(-time.Hour).Unix()}}, nil, map[string]any{"nbf": at(-time.Hour)}, nil},
		{"age", authtest.Token{Age: time.Minute}, nil,
			map[string]any{"iat": at(-time.Minute), "nbf": at(-time.Minute), "exp": at(59 * time.Minute)}, nil},
		{"lifetime", authtest.Token{Lifetime: time.Minute}, nil, map[string]any{"iat": at(0), "exp": at(time.Minute)}, nil},
		{"insufficient scope", authtest.InsufficientScope(), nil, map[string]any{"scope": ""}, nil},
		{"expired", authtest.Expired(), nil,
			map[string]any{"exp": at(-time.Hour), "iat": at(-2 * time.Hour), "nbf": at(-2 * time.Hour)}, nil},
		{"not yet valid", authtest.Token{NotBefore: time.Hour, Lifetime: 2 * time.Hour}, nil,
			map[string]any{"nbf": at(time.Hour), "exp": at(2 * time.Hour), "iat": at(0)}, nil},
		{"wrong audience", authtest.WrongAudience(), nil, map[string]any{"aud": "https://wrong-audience.example"}, nil},
		{"wrong issuer", authtest.WrongIssuer(), nil, map[string]any{"iss": "https://wrong-issuer.example"}, nil},
		{"type", authtest.Token{Typ: "JWT"}, map[string]any{"typ": "JWT"}, nil, nil},
		{"no type", authtest.Token{Header: map[string]any{"typ": nil}}, map[string]any{"typ": nil}, nil, nil},
		{"rs256", authtest.Token{Alg: jose.RS256}, map[string]any{"alg": "RS256", "kid": "rs256-1"}, nil, nil},
		{"eddsa", authtest.Token{Alg: jose.EdDSA}, map[string]any{"alg": "EdDSA", "kid": "eddsa-1"}, nil, nil},
		{"ps256 on rs256 key", authtest.Token{Alg: jose.PS256}, map[string]any{"alg": "PS256", "kid": "rs256-1"}, nil, nil},
		{"added es384", authtest.Token{Alg: jose.ES384}, map[string]any{"alg": "ES384", "kid": "es384-1"}, nil, nil},
		{"unknown kid", authtest.Token{ForeignKey: true, KID: "unknown-kid"}, map[string]any{"alg": "ES256", "kid": "unknown-kid"}, nil, jose.ErrJWKSKidNotFound},
		{"unknown kid rsa", authtest.Token{ForeignKey: true, KID: "unknown-kid", Alg: jose.RS256}, map[string]any{"alg": "RS256", "kid": "unknown-kid"}, nil, jose.ErrJWKSKidNotFound},
		{"wrong key", authtest.Token{ForeignKey: true}, map[string]any{"kid": "es256-1"}, nil, jose.ErrCryptoFailure},
		{"wrong key eddsa", authtest.Token{Alg: jose.EdDSA, ForeignKey: true}, map[string]any{"kid": "eddsa-1"}, nil, jose.ErrCryptoFailure},
		{"kid", authtest.Token{KID: "rs256-1"}, map[string]any{"alg": "ES256", "kid": "rs256-1"}, nil, errAny},
		{"no kid", authtest.NoKID(), map[string]any{"kid": nil}, nil, errAny},
		{"header", authtest.Token{Header: map[string]any{"jku": "https://evil.example/jwks", "crit": []string{"exp"}}},
			map[string]any{"jku": "https://evil.example/jwks", "crit": []any{"exp"}}, nil, errAny},
		{"sign with", authtest.Token{Key: outside}, map[string]any{"alg": "EdDSA", "kid": "outside"}, nil, jose.ErrJWKSKidNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := iss.Token(t, tt.spec)
			d := decode(t, raw)
			for k, want := range tt.wantHeader {
				checkMember(t, "header", d.header, k, want)
			}
			for k, want := range tt.wantClaims {
				checkMember(t, "claim", d.claims, k, want)
			}
			_, err := tryVerify(iss.Keys(), raw)
			switch {
			case tt.wantErr == errAny && err == nil:
				t.Errorf("verify: got nil error, want one")
			case tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Errorf("verify: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errAny means "some verification error".
var errAny = errors.New("any error")

func checkMember(t *testing.T, what string, m map[string]any, k string, want any) {
	t.Helper()
	got, ok := m[k]
	if want == nil {
		if ok {
			t.Errorf("%s %q = %v, want absent", what, k, got)
		}
		return
	}
	if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
		t.Errorf("%s %q = %s, want %s", what, k, g, w)
	}
}

func TestHMACConfusion(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	raw := iss.Token(t, authtest.Token{Alg: jose.HS256})
	var rsaPub any
	for _, k := range iss.Keys() {
		if k.KeyID == "rs256-1" {
			rsaPub = k.Key
		}
	}
	der, err := x509.MarshalPKIXPublicKey(rsaPub)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := tok.Claims(secret, &claims); err != nil {
		t.Fatalf("HS256 token does not verify with the RSA PEM: %s", err.Error())
	}
	if tok.Headers[0].KeyID != "rs256-1" {
		t.Errorf("kid = %q, want %q", tok.Headers[0].KeyID, "rs256-1")
	}
}

func TestAlgNone(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	raw := iss.Token(t, authtest.AlgNone())
	if !strings.HasSuffix(raw, ".") {
		t.Errorf("unsigned token %q: want empty signature", raw)
	}
	d := decode(t, raw)
	checkMember(t, "header", d.header, "alg", "none")
	checkMember(t, "header", d.header, "kid", nil)
	checkMember(t, "header", d.header, "typ", "at+jwt")
	d = decode(t, iss.Token(t, authtest.Token{Alg: "none", KID: "es256-1"}))
	checkMember(t, "header", d.header, "alg", "none")
	checkMember(t, "header", d.header, "kid", "es256-1")
}

func TestKey(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	for _, alg := range allAlgs {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			k := authtest.GenerateKey(alg, "k-"+string(alg))
			pub := k.Public()
			if _, symmetric := k.Key.([]byte); symmetric {
				pub = k
			}
			if pub.Algorithm != string(alg) || pub.Use != "sig" || pub.KeyID != "k-"+string(alg) {
				t.Errorf("jwk alg %q use %q kid %q", pub.Algorithm, pub.Use, pub.KeyID)
			}
			raw := iss.Token(t, authtest.Token{Key: k, Subject: "s"})
			if got := verify(t, []jose.JSONWebKey{pub}, raw)["sub"]; got != "s" {
				t.Errorf("sub = %v, want s", got)
			}
			d := decode(t, raw)
			checkMember(t, "header", d.header, "alg", string(alg))
			checkMember(t, "header", d.header, "kid", pub.KeyID)
			checkMember(t, "header", d.header, "typ", "at+jwt")
		})
	}
}

// fatalTB records Fatal calls; the failing call ends its goroutine.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runFatal(tb testing.TB, fn func(testing.TB)) string {
	f := &fatalTB{TB: tb}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.msg
}

func TestFatal(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	if msg := runFatal(t, func(tb testing.TB) { iss.Token(tb, authtest.Token{Alg: jose.ES512}) }); !strings.Contains(msg, "no private key") {
		t.Errorf("Token with ES512: fatal %q, want a missing-key message", msg)
	}
	if msg := runFatal(t, func(tb testing.TB) { authtest.NewIssuer(tb, authtest.IssuerConfig{Path: "tenant"}) }); msg == "" {
		t.Errorf("NewIssuer with a relative path: want t.Fatal")
	}
	if msg := runFatal(t, func(tb testing.TB) { iss.Token(tb, authtest.Token{Claims: map[string]any{"x": func() {}}}) }); msg == "" {
		t.Errorf("Token with an unencodable claim: want t.Fatal")
	}
}
