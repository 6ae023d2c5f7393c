package middleware

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

const defaultAlgs = "ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"

// dpopFixture is an issuer, a validator that accepts cnf, a Middleware
// with a DPoP policy, served over real HTTP on loopback, and two client
// keys.
type dpopFixture struct {
	iss        *authtest.Issuer
	m          *Middleware
	srv        *httptest.Server
	key, other *ecdsa.PrivateKey
	jkt        string
}

func newDPoPFixture(t testing.TB, policy DPoPPolicy, mutate func(*Config)) *dpopFixture {
	t.Helper()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:           []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:         []string{resource},
		Now:               iss.Now,
		AllowConfirmation: policy != DPoPOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(v, iss)
	cfg.DPoP = DPoPConfig{Policy: policy, Proof: dpop.Config{Now: iss.Now}}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f := &dpopFixture{iss: iss, m: m, key: newECKey(t), other: newECKey(t)}
	f.jkt = thumbprint(t, f.key)
	f.srv = httptest.NewServer(m.Handler(principalHandler()))
	t.Cleanup(f.srv.Close)
	return f
}

func newECKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func thumbprint(t testing.TB, k crypto.Signer) string {
	t.Helper()
	j := jose.JSONWebKey{Key: k.Public()}
	tp, err := j.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

// principalHandler answers 200 with the principal's binding.
func principalHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sub": p.Subject, "dpop": p.SenderConstrained, "jkt": p.KeyThumbprint})
	})
}

// boundToken mints a token bound to jkt (cnf.jkt) with scopes.
func (f *dpopFixture) boundToken(t testing.TB, jkt string, scopes ...string) string {
	t.Helper()
	return f.iss.Token(t, authtest.Token{Scopes: append([]string{}, scopes...), Claims: map[string]any{"cnf": map[string]any{"jkt": jkt}}})
}

var proofN atomic.Int64

// proof describes a DPoP proof; the zero value of each field means "as a
// correct proof for the fixture's key would have it".
type proof struct {
	key     *ecdsa.PrivateKey // signer, and jwk unless jwk is set
	alg     string            // "none" leaves the signature empty; "HS256" signs with hmacKey
	hmacKey []byte
	header  map[string]any // replaces individual header members
	claims  map[string]any // replaces individual claims; nil values delete
	jti     string
}

// sign returns the compact proof for an access token tok.
func (f *dpopFixture) sign(t testing.TB, p proof, tok string) string {
	t.Helper()
	key := p.key
	if key == nil {
		key = f.key
	}
	alg := p.alg
	if alg == "" {
		alg = "ES256"
	}
	pub, _ := jose.JSONWebKey{Key: key.Public()}.MarshalJSON()
	var jwk map[string]any
	_ = json.Unmarshal(pub, &jwk)
	h := map[string]any{"typ": "dpop+jwt", "alg": alg, "jwk": jwk}
	maps.Copy(h, p.header)
	jti := p.jti
	if jti == "" {
		jti = "proof-" + strconv.FormatInt(proofN.Add(1), 10)
	}
	sum := sha256.Sum256([]byte(tok))
	c := map[string]any{
		"jti": jti, "htm": http.MethodPost, "htu": resource,
		"iat": f.iss.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:]),
	}
	for k, v := range p.claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(hb) + "." + enc.EncodeToString(cb)
	var sig []byte
	switch alg {
	case "none":
	case "HS256":
		m := hmac.New(sha256.New, p.hmacKey)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	default:
		d := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, key, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	}
	return input + "." + enc.EncodeToString(sig)
}

// dpopChallenge renders the DPoP challenge of the tests' middleware.
func dpopChallenge(params string) string {
	if params != "" {
		params += ", "
	}
	return `DPoP ` + params + `algs="` + defaultAlgs + `"`
}

var (
	baseParams   = `scope="mcp", resource_metadata="` + metadataURL + `"`
	offerBearer  = `Bearer ` + baseParams
	offerDPoP    = dpopChallenge(baseParams)
	invalidProof = dpopChallenge(`error="invalid_dpop_proof", ` + baseParams + `, error_description="The DPoP proof is invalid"`)
	dpopInvalid  = dpopChallenge(`error="invalid_token", ` + baseParams + `, error_description="The access token is invalid"`)
	bearerInv    = `Bearer error="invalid_token", ` + baseParams + `, error_description="The access token is invalid"`
	useNonce     = dpopChallenge(`error="use_dpop_nonce", ` + baseParams + `, error_description="Resource server requires nonce in DPoP proof"`)
)

func newServer(t testing.TB, m *Middleware) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(m.Handler(principalHandler()))
	t.Cleanup(s.Close)
	return s
}

// httptestGet returns the body of a GET to h.
func httptestGet(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metadataURL, nil))
	return rec.Body.String()
}

func newRawServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}
