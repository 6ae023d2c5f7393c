package integration

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
)

const dpopAlgs = `algs="ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"`

// TestDPoPEndToEnd: the example server with DPoP required, the
// development authorization server issuing DPoP-bound tokens, and the
// official go-sdk client over mcpguard's client transport with a DPoP
// key. The first request's 401 offers only DPoP; the transport
// authorizes with a DPoP proof at the token endpoint (RFC 9449 §5), then
// every MCP request carries "Authorization: DPoP" and a fresh proof; a
// tool needing more scope gets a 403 with the DPoP scheme and a step-up.
// Both MCP revisions.
func TestDPoPEndToEnd(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{dpop: middleware.DPoPRequired})
			ctx := testContext(t)
			key, err := client.NewDPoPKey(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := &dpopRecorder{base: http.DefaultTransport}
			az := &codeAuthorizer{loginHint: "alice@tenant-a"}
			tr, err := client.New(client.Config{Resource: e.mcpURL, Authorizer: az, DPoP: key, Base: rec})
			if err != nil {
				t.Fatal(err)
			}
			cl := mcp.NewClient(&mcp.Implementation{Name: "mcpguard-dpop", Version: "0.0.0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: e.mcpURL, HTTPClient: &http.Client{Transport: tr, Timeout: 20 * time.Second},
				MaxRetries: -1, DisableStandaloneSSE: true,
			}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != rev {
				t.Fatalf("negotiated %q, want %q", got, rev)
			}
			var who server.WhoamiResult
			callJSON(ctx, t, cs, server.ToolWhoami, nil, &who)
			if who.Subject != "alice" {
				t.Errorf("whoami = %+v", who)
			}
			var out map[string]any
			callJSON(ctx, t, cs, server.ToolNotesWrite, map[string]any{"text": "bound to my key"}, &out)

			ex := rec.all()
			first := ex[0]
			wantFirst := `DPoP scope="` + baseScope + `", resource_metadata="` + e.metaURL + `", ` + dpopAlgs
			if first.status != 401 || !slices.Equal(first.wwwAuth, []string{wantFirst}) {
				t.Errorf("first answer %d %q, want 401 %q", first.status, first.wwwAuth, wantFirst)
			}
			var saw403 bool
			for _, x := range ex {
				if x.status == 403 {
					saw403 = true
					if len(x.wwwAuth) != 1 || !strings.HasPrefix(x.wwwAuth[0], `DPoP error="insufficient_scope"`) || !strings.HasSuffix(x.wwwAuth[0], dpopAlgs) {
						t.Errorf("403 challenge %q, want the DPoP scheme", x.wwwAuth)
					}
				}
				if x.status == 200 || x.status == 202 {
					if !x.dpop || x.proofs != 1 {
						t.Errorf("authorized request without DPoP: %+v", x)
					}
				}
			}
			if !saw403 {
				t.Error("no step-up 403 seen")
			}
			if calls := az.requests(); len(calls) != 2 || calls[0].DPoP != key {
				t.Errorf("authorizations = %d, want 2 with the transport's key", len(calls))
			}
		})
	}
}

// dpopRecorder records the scheme, proof count and answer of each request.
type dpopRecorder struct {
	base http.RoundTripper
	ex   []dpopExchange
	mu   chan struct{}
}

type dpopExchange struct {
	dpop    bool
	proofs  int
	status  int
	wwwAuth []string
}

func (r *dpopRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	x := dpopExchange{dpop: strings.HasPrefix(req.Header.Get("Authorization"), "DPoP "), proofs: len(req.Header.Values("DPoP"))}
	if resp != nil {
		x.status, x.wwwAuth = resp.StatusCode, resp.Header.Values("WWW-Authenticate")
	}
	r.lock()
	r.ex = append(r.ex, x)
	r.unlock()
	return resp, err
}

func (r *dpopRecorder) lock() {
	if r.mu == nil {
		r.mu = make(chan struct{}, 1)
	}
	r.mu <- struct{}{}
}
func (r *dpopRecorder) unlock() { <-r.mu }
func (r *dpopRecorder) all() []dpopExchange {
	r.lock()
	defer r.unlock()
	return slices.Clone(r.ex)
}

// hostileKey signs DPoP proofs with arbitrary headers and claims.
type hostileKey struct {
	priv *ecdsa.PrivateKey
	jkt  string
}

func newHostileKey(t *testing.T) *hostileKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j := jose.JSONWebKey{Key: &k.PublicKey}
	tp, _ := j.Thumbprint(crypto.SHA256)
	return &hostileKey{priv: k, jkt: base64.RawURLEncoding.EncodeToString(tp)}
}

// proof signs a proof for a POST to htu with tok, then applies the
// header and claim overrides (nil deletes a claim); alg none leaves the
// signature empty and HS256 signs with a shared secret.
func (k *hostileKey) proof(t *testing.T, htu, tok string, hdr, claims map[string]any) string {
	t.Helper()
	pub, _ := jose.JSONWebKey{Key: &k.priv.PublicKey}.MarshalJSON()
	var jwk map[string]any
	_ = json.Unmarshal(pub, &jwk)
	h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}
	for n, v := range hdr {
		h[n] = v
	}
	sum := sha256.Sum256([]byte(tok))
	jti := make([]byte, 12)
	_, _ = rand.Read(jti)
	c := map[string]any{"jti": base64.RawURLEncoding.EncodeToString(jti), "htm": "POST", "htu": htu,
		"iat": time.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:])}
	for n, v := range claims {
		if v == nil {
			delete(c, n)
		} else {
			c[n] = v
		}
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(hb) + "." + enc.EncodeToString(cb)
	var sig []byte
	switch h["alg"] {
	case "none":
	case "HS256":
		m := hmac.New(sha256.New, []byte("shared-secret-shared-secret-0123"))
		m.Write([]byte(input))
		sig = m.Sum(nil)
	default:
		d := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(rand.Reader, k.priv, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	}
	return input + "." + enc.EncodeToString(sig)
}

// extraDPoP adds one more DPoP header line to every request.
type extraDPoP struct{ proof string }

func (x extraDPoP) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Add("DPoP", x.proof)
	return http.DefaultTransport.RoundTrip(req)
}

// TestDPoPHostileProofs sends every classic mistake to the example server
// (DPoP allowed) over real HTTP, with exact statuses and challenges.
func TestDPoPHostileProofs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{dpop: middleware.DPoPAllowed})
	ctx := testContext(t)
	key, other := newHostileKey(t), newHostileKey(t)
	scopes := []string{baseScope}
	tok, err := e.as.IssueBoundToken(key.jkt, "mallory", "tenant-m", rawClientID, e.mcpURL, scopes)
	if err != nil {
		t.Fatal(err)
	}
	base := `scope="` + baseScope + `", resource_metadata="` + e.metaURL + `"`
	bearerOffer := `Bearer ` + base
	invalidProof := `DPoP error="invalid_dpop_proof", ` + base + `, error_description="The DPoP proof is invalid", ` + dpopAlgs
	bindingRefused := `DPoP error="invalid_token", ` + base + `, error_description="The access token is invalid", ` + dpopAlgs
	priv, _ := jose.JSONWebKey{Key: key.priv}.MarshalJSON()
	var privJWK map[string]any
	_ = json.Unmarshal(priv, &privJWK)
	replayed := key.proof(t, e.mcpURL, tok, nil, nil)

	tests := []struct {
		name    string
		authz   string
		proof   string
		second  string // a second DPoP header line
		status  int
		wwwAuth []string
	}{
		{"valid proof", "DPoP " + tok, replayed, "", 200, nil},
		{"replayed jti", "DPoP " + tok, replayed, "", 401, []string{invalidProof, bearerOffer}},
		{"htu with query", "DPoP " + tok, key.proof(t, e.mcpURL+"?a=b", tok, nil, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"htu with fragment", "DPoP " + tok, key.proof(t, e.mcpURL+"#top", tok, nil, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"htm lower case", "DPoP " + tok, key.proof(t, e.mcpURL, tok, nil, map[string]any{"htm": "post"}), "", 401, []string{invalidProof, bearerOffer}},
		{"iat out of window", "DPoP " + tok, key.proof(t, e.mcpURL, tok, nil, map[string]any{"iat": time.Now().Add(-10 * time.Minute).Unix()}), "", 401, []string{invalidProof, bearerOffer}},
		{"iat in the future", "DPoP " + tok, key.proof(t, e.mcpURL, tok, nil, map[string]any{"iat": time.Now().Add(10 * time.Minute).Unix()}), "", 401, []string{invalidProof, bearerOffer}},
		{"ath of another token", "DPoP " + tok, key.proof(t, e.mcpURL, "another-token", nil, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"signed by a key other than cnf.jkt", "DPoP " + tok, other.proof(t, e.mcpURL, tok, nil, nil), "", 401, []string{bindingRefused, bearerOffer}},
		{"jwk with private members", "DPoP " + tok, key.proof(t, e.mcpURL, tok, map[string]any{"jwk": privJWK}, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"alg none", "DPoP " + tok, key.proof(t, e.mcpURL, tok, map[string]any{"alg": "none"}, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"alg HS256", "DPoP " + tok, key.proof(t, e.mcpURL, tok, map[string]any{"alg": "HS256"}, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"two proofs", "DPoP " + tok, key.proof(t, e.mcpURL, tok, nil, nil), key.proof(t, e.mcpURL, tok, nil, nil), 401, []string{invalidProof, bearerOffer}},
		{"proof for another resource", "DPoP " + tok, key.proof(t, "http://127.0.0.1:1/mcp", tok, nil, nil), "", 401, []string{invalidProof, bearerOffer}},
		{"bound token as Bearer", "Bearer " + tok, "", "", 401, []string{`Bearer error="invalid_token", ` + base + `, error_description="The access token is invalid"`, `DPoP ` + base + `, ` + dpopAlgs}},
		{"no proof", "DPoP " + tok, "", "", 401, []string{invalidProof, bearerOffer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{"Authorization": tt.authz}
			if tt.proof != "" {
				hdr["DPoP"] = tt.proof
			}
			hc := http.DefaultClient
			if tt.second != "" {
				hc = &http.Client{Transport: extraDPoP{tt.second}}
			}
			r, err := rawDo(ctx, e.mcpURL, rawRequest{revision: rev20260728, method: "tools/call", params: toolCall(server.ToolWhoami, nil), header: hdr, client: hc})
			if err != nil {
				t.Fatal(err)
			}
			if r.status != tt.status || !slices.Equal(r.wwwAuth, tt.wwwAuth) {
				t.Errorf("got %d\n%s\nwant %d\n%s", r.status, strings.Join(r.wwwAuth, "\n"), tt.status, strings.Join(tt.wwwAuth, "\n"))
			}
		})
	}
}

// TestDPoPAllowedBearerClients: with DPoP allowed, every 401 carries a
// Bearer and a DPoP challenge; the go-sdk's own OAuth client, which only
// speaks Bearer, still completes its flow (CIMD and DCR, both revisions).
func TestDPoPAllowedBearerClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{dpop: middleware.DPoPAllowed})
	for _, reg := range []registration{viaCIMD, viaDCR} {
		for _, rev := range revisions {
			t.Run(reg.String()+"/"+rev, func(t *testing.T) {
				ctx := testContext(t)
				cs, rec := e.connect(ctx, t, sdkClient{reg: reg, revision: rev, loginHint: "bob@tenant-b"})
				var who server.WhoamiResult
				callJSON(ctx, t, cs, server.ToolWhoami, nil, &who)
				if who.Subject != "bob" {
					t.Errorf("whoami = %+v", who)
				}
				got := rec.withStatus(401)
				want := []string{noToken(e.metaURL), `DPoP scope="` + baseScope + `", resource_metadata="` + e.metaURL + `", ` + dpopAlgs}
				if len(got) == 0 || !slices.Equal(got[0].wwwAuth, want) {
					t.Errorf("401 answers = %+v, want challenges %q", got, want)
				}
			})
		}
	}
}
