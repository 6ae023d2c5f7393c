package validate_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// Fixtures of this file; they use only the exported API, with tokens signed
// by go-jose with keys from authtest.
var extNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	extIss   = "https://as.example.com"
	extOther = "https://other.example.com"
	extAud   = "https://mcp.example.com/mcp"
)

func extClaims(kv ...any) map[string]any {
	c := map[string]any{
		"iss": extIss, "sub": "alice", "aud": extAud, "client_id": "c1", "jti": "j1",
		"iat": extNow.Unix(), "exp": extNow.Add(time.Hour).Unix(), "scope": "a b",
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
			continue
		}
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

// extSigner signs JWTs with one ES256 key, without an authtest.Issuer.
type extSigner struct{ key jose.JSONWebKey }

func newExtSigner() *extSigner {
	return &extSigner{key: authtest.GenerateKey(jose.ES256, "signer-"+rand.Text()[:8])}
}

// PublicJWK is the verification key, with its kid.
func (s *extSigner) PublicJWK() jose.JSONWebKey { return s.key.Public() }

// Sign returns a compact JWS over claims with the protected header entries
// of header besides alg and the signer's kid.
func (s *extSigner) Sign(t *testing.T, header, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	opts := (&jose.SignerOptions{}).WithHeader("kid", s.key.KeyID)
	for k, v := range header {
		opts.WithHeader(jose.HeaderKey(k), v)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: s.key.Key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// extRaw joins the base64url encodings of a hand-made header, payload and
// signature.
func extRaw(header, payload, signature string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString([]byte(signature))
}

func extValidator(t *testing.T, s *extSigner, maxTokenBytes int) *validate.Validator {
	t.Helper()
	v, err := validate.New(validate.Config{
		Issuers:       []validate.Issuer{{Issuer: extIss, Keys: &validate.StaticKeys{Set: []jose.JSONWebKey{s.PublicJWK()}}}},
		Audiences:     []string{extAud},
		Now:           func() time.Time { return extNow },
		MaxTokenBytes: maxTokenBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTrusts(t *testing.T) {
	s := newExtSigner()
	stranger := newExtSigner()
	typ := map[string]any{"typ": "at+jwt"}
	good := s.Sign(t, typ, extClaims())
	_, payload, _ := strings.Cut(good, ".")
	raw := func(h, p string) string { return extRaw(h, p, "sig") }
	tests := []struct {
		name    string
		raw     string
		max     int // Config.MaxTokenBytes; 0 default
		want    bool
		wantErr error // of Validate, when want is true: Trusts never vouches for validity
	}{
		{name: "valid", raw: good, want: true},
		{name: "forged signature", raw: stranger.Sign(t, typ, extClaims()), want: true, wantErr: validate.Error{Reason: "unknown_key"}},
		{name: "expired", raw: s.Sign(t, typ, extClaims("exp", extNow.Add(-time.Hour).Unix())), want: true, wantErr: validate.Error{Reason: "expired"}},
		{name: "wrong audience", raw: s.Sign(t, typ, extClaims("aud", "https://x.example")), want: true, wantErr: validate.Error{Reason: "audience"}},
		{name: "unsigned", raw: extRaw(`{"alg":"none"}`, `{"iss":"`+extIss+`"}`, ""), want: true, wantErr: validate.Error{Reason: "algorithm"}},
		{name: "hmac", raw: raw(`{"alg":"HS256","typ":"at+jwt","kid":"k"}`, `{"iss":"`+extIss+`"}`), want: true, wantErr: validate.Error{Reason: "algorithm"}},
		{name: "escaped iss", raw: raw(`{"alg":"ES256","typ":"at+jwt","kid":"k"}`, `{"iss":"https:\/\/as.example.com"}`), want: true, wantErr: validate.Error{Reason: "unknown_key"}},
		{name: "duplicate iss, one trusted", raw: raw(`{"alg":"ES256","typ":"at+jwt","kid":"k"}`, `{"iss":"`+extOther+`","iss":"`+extIss+`"}`), want: true, wantErr: validate.Error{Reason: "malformed"}},
		{name: "other issuer", raw: s.Sign(t, typ, extClaims("iss", extOther))},
		{name: "no iss", raw: s.Sign(t, typ, extClaims("iss", nil))},
		{name: "iss not a string", raw: raw(`{"alg":"ES256"}`, `{"iss":["`+extIss+`"]}`)},
		// A case variant of a claim Validate reads makes the claims set
		// ambiguous: it stays on the JWT path, where Validate refuses it
		// (stricter since internal/strictjson; it used to be routed away).
		{name: "iss differs in case", raw: raw(`{"alg":"ES256","typ":"at+jwt","kid":"k"}`, `{"ISS":"`+extIss+`"}`), want: true, wantErr: validate.Error{Reason: "malformed"}},
		{name: "iss differs in case, other issuer", raw: raw(`{"alg":"ES256","typ":"at+jwt","kid":"k"}`, `{"ISS":"https://x.example"}`), want: true, wantErr: validate.Error{Reason: "malformed"}},
		{name: "no alg", raw: raw(`{"typ":"at+jwt"}`, `{"iss":"`+extIss+`"}`)},
		{name: "header not an object", raw: raw(`"ES256"`, `{"iss":"`+extIss+`"}`)},
		{name: "header not JSON", raw: raw(`{"alg":"ES256"`, `{"iss":"`+extIss+`"}`)},
		{name: "payload not JSON", raw: raw(`{"alg":"ES256"}`, `{"iss":"`+extIss+`"`)},
		{name: "padded base64", raw: good[:strings.IndexByte(good, '.')] + "=." + payload},
		{name: "opaque", raw: "opaque-0123456789abcdef"},
		{name: "empty", raw: ""},
		{name: "two segments", raw: good[:strings.LastIndexByte(good, '.')]},
		{name: "empty header", raw: "." + payload},
		{name: "empty payload", raw: strings.Replace(good, "."+strings.Split(good, ".")[1]+".", "..", 1)},
		{name: "five segments (JWE)", raw: good + ".a.b"},
		{name: "line break", raw: strings.Replace(good, ".", ".\n", 1)},
		{name: "over MaxTokenBytes", raw: good, max: len(good) - 1},
		{name: "at MaxTokenBytes", raw: good, max: len(good), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := extValidator(t, s, tt.max)
			if got := v.Trusts(tt.raw); got != tt.want {
				t.Fatalf("Trusts = %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			if _, err := v.Validate(t.Context(), tt.raw); !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Validate = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestTrustsAllocs(t *testing.T) {
	s := newExtSigner()
	v := extValidator(t, s, 0)
	tok := s.Sign(t, map[string]any{"typ": "at+jwt"}, extClaims())
	if n := testing.AllocsPerRun(100, func() { v.Trusts(tok) }); n > 2 {
		t.Errorf("Trusts allocates %v times, want at most 2", n)
	}
	if n := testing.AllocsPerRun(100, func() { v.Trusts("opaque-token") }); n != 0 {
		t.Errorf("Trusts(opaque) allocates %v times, want 0", n)
	}
}

func TestNewClaims(t *testing.T) {
	in := validate.Claims{Issuer: extIss, Subject: "alice", Audience: []string{extAud}, Scopes: []string{"a", "b"}, Expiry: extNow}
	body := []byte(`{"active":true,"sub":"alice","ext":{"n":1}}`)
	c := validate.NewClaims(in, body)

	// Copies, not aliases.
	body[2] = 'X'
	in.Audience[0], in.Scopes[0] = "changed", "changed"
	if c.Audience[0] != extAud || c.Scopes[0] != "a" {
		t.Errorf("claims share slices with the argument: aud %q scopes %q", c.Audience, c.Scopes)
	}
	if c.Issuer != extIss || c.Subject != "alice" || !c.Expiry.Equal(extNow) || !c.HasScope("b") {
		t.Errorf("fields not copied: %+v", c)
	}
	var got struct {
		Active bool `json:"active"`
		Ext    struct {
			N int `json:"n"`
		} `json:"ext"`
	}
	if err := c.Decode(&got); err != nil || !got.Active || got.Ext.N != 1 {
		t.Errorf("Decode = %v, %+v; want the claims set passed in", err, got)
	}

	// The payload of a verified Claims is replaced, not kept.
	s := newExtSigner()
	v := extValidator(t, s, 0)
	verified, err := v.Validate(t.Context(), s.Sign(t, map[string]any{"typ": "at+jwt"}, extClaims("x", "jwt")))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := validate.NewClaims(*verified, []byte(`{"x":"other"}`)).Decode(&m); err != nil || m["x"] != "other" || len(m) != 1 {
		t.Errorf("Decode after NewClaims = %v %v, want only the new claims set", m, err)
	}
	var empty map[string]any
	if err := validate.NewClaims(validate.Claims{}, nil).Decode(&empty); err == nil {
		t.Errorf("Decode with nil claims JSON = nil error, want an encoding/json error")
	}
	if !slices.Equal(verified.Scopes, []string{"a", "b"}) {
		t.Errorf("original claims changed: %q", verified.Scopes)
	}
}
