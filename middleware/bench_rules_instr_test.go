package middleware

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"github.com/go-jose/go-jose/v4"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// TestRulesInstructions is the instruction count of BenchmarkRules'
// rules=0 and rules=10 (docs/performance.md, "Rules and resource
// prefixes"), opt in: MCPGUARD_RULES_INSTR=N serves the request N times
// after 100 warm-up requests, with the ten rules when
// MCPGUARD_RULES_CASE=10. Unlike the benchmark, every step before the loop
// costs the same number of instructions in every run (an ES256 key, no
// RSA key generation), so that the difference of two runs under callgrind
// with different N, divided by the difference of N, is the instructions of
// one request.
func TestRulesInstructions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MCPGUARD_RULES_INSTR"))
	if n <= 0 {
		t.Skip("opt in: MCPGUARD_RULES_INSTR=requests")
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	const issURL = "https://issuer.example"
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	claims, _ := json.Marshal(map[string]any{"iss": issURL, "sub": "alice", "aud": resource, "client_id": "c1", "scope": "mcp tools:read tools:call weather:read",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "j1"})
	jws, err := sig.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := jws.CompactSerialize()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: issURL, Keys: &validate.StaticKeys{Set: []jose.JSONWebKey{jwk.Public()}}}},
		Audiences: []string{resource}, TenantClaim: "tenant", Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	iss := &authtest.Issuer{URL: issURL}
	cfg := testConfig(v, iss)
	if os.Getenv("MCPGUARD_RULES_CASE") == "10" {
		cfg.Rules = benchRules()
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := m.Handler(next)
	raw := []byte(rpcBody(modernRev, "tools/call", "get_weather"))
	r := rpcRequest(modernRev, "tools/call", "get_weather", tok)
	body := &rewindBody{}
	r.Body, r.ContentLength = body, int64(len(raw))
	dw := &discardWriter{h: http.Header{}}
	for range 100 {
		body.Reset(raw)
		h.ServeHTTP(dw, r)
	}
	rec := httptest.NewRecorder()
	body.Reset(raw)
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	serveLoop(h, dw, r, body, raw, n)
}

//go:noinline
func serveLoop(h http.Handler, dw http.ResponseWriter, r *http.Request, body *rewindBody, raw []byte, n int) {
	for range n {
		body.Reset(raw)
		h.ServeHTTP(dw, r)
	}
}
