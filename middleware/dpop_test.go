package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate/dpop"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// dpopCall is one request to a dpopFixture's server.
type dpopCall struct {
	rev    string
	authz  string   // Authorization value; "" sends none
	proofs []string // DPoP header lines
	method string   // JSON-RPC method; "" is tools/call get_weather
}

type dpopResult struct {
	status  int
	wwwAuth []string
	body    string
	nonce   string
}

func (f *dpopFixture) do(t testing.TB, c dpopCall) dpopResult {
	t.Helper()
	rev := c.rev
	if rev == "" {
		rev = modernRev
	}
	method, name := "tools/call", "get_weather"
	if c.method != "" {
		method, name = c.method, ""
	}
	r := rpcRequest(rev, method, name, "")
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(rpcBody(rev, method, name)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.Header.Clone()
	if c.authz != "" {
		req.Header.Set("Authorization", c.authz)
	}
	for _, p := range c.proofs {
		req.Header.Add("DPoP", p)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return dpopResult{resp.StatusCode, resp.Header.Values("WWW-Authenticate"), strings.TrimSpace(string(b)), resp.Header.Get("DPoP-Nonce")}
}

var allScopes = []string{"mcp", "tools:call", "weather:read"}

// TestDPoPAnswers drives every RFC 9449 §4.3 check and the classic
// mistakes over real HTTP, each with its exact status, challenges and
// body, under both MCP revisions.
func TestDPoPAnswers(t *testing.T) {
	type call func(t testing.TB, f *dpopFixture) dpopCall
	bound := func(p proof) call {
		return func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, allScopes...)
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, p, tok)}}
		}
	}
	const okBody = `"dpop":true`
	tests := []struct {
		name    string
		policy  DPoPPolicy
		call    call
		status  int
		wwwAuth []string
		body    string // a substring for 200, the exact body otherwise
	}{
		{"bound token with proof", DPoPAllowed, bound(proof{}), 200, nil, okBody},
		{"bound token with proof, required", DPoPRequired, bound(proof{}), 200, nil, okBody},
		{"bearer token, allowed", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			return dpopCall{authz: "Bearer " + f.iss.Token(t, authtest.Token{Scopes: allScopes})}
		}, 200, nil, `"dpop":false`},
		{"no credentials, allowed: both schemes", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall { return dpopCall{} },
			401, []string{offerBearer, offerDPoP}, bodyUnauthorized},
		{"no credentials, required: DPoP only", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall { return dpopCall{} },
			401, []string{offerDPoP}, bodyUnauthorized},
		{"bearer token, required: no accepted credentials", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			return dpopCall{authz: "Bearer " + f.iss.Token(t, authtest.Token{Scopes: allScopes})}
		}, 401, []string{offerDPoP}, bodyUnauthorized},
		{"bound token presented as Bearer", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			return dpopCall{authz: "Bearer " + f.boundToken(t, f.jkt, allScopes...)}
		}, 401, []string{bearerInv, offerDPoP}, bodyInvalidToken},
		{"bound token presented as Bearer with a proof", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, allScopes...)
			return dpopCall{authz: "Bearer " + tok, proofs: []string{f.sign(t, proof{}, tok)}}
		}, 401, []string{bearerInv, offerDPoP}, bodyInvalidToken},
		{"unbound token with the DPoP scheme", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.iss.Token(t, authtest.Token{Scopes: allScopes})
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}
		}, 401, []string{dpopInvalid, offerBearer}, bodyInvalidToken},
		{"proof signed by a key other than cnf.jkt", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, allScopes...)
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{key: f.other}, tok)}}
		}, 401, []string{dpopInvalid, offerBearer}, bodyInvalidToken},
		{"invalid token with the DPoP scheme", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.iss.Token(t, authtest.Token{Scopes: allScopes, Age: 2 * time.Hour})
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}
		}, 401, []string{dpopInvalid}, bodyInvalidToken},
		{"no proof", DPoPAllowed, func(t testing.TB, f *dpopFixture) dpopCall {
			return dpopCall{authz: "DPoP " + f.boundToken(t, f.jkt, allScopes...)}
		}, 401, []string{invalidProof, offerBearer}, bodyInvalidProof},
		{"two proofs", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, allScopes...)
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok), f.sign(t, proof{}, tok)}}
		}, 401, []string{invalidProof}, bodyInvalidProof},
		{"htu with query", DPoPRequired, bound(proof{claims: map[string]any{"htu": resource + "?x=1"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"htu with fragment", DPoPRequired, bound(proof{claims: map[string]any{"htu": resource + "#f"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"htu normalised", DPoPRequired, bound(proof{claims: map[string]any{"htu": "HTTPS://MCP.EXAMPLE.COM:443/./mcp"}}), 200, nil, okBody},
		{"proof for another resource", DPoPRequired, bound(proof{claims: map[string]any{"htu": "https://other.example.com/mcp"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"htm lower case", DPoPRequired, bound(proof{claims: map[string]any{"htm": "post"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"htm GET", DPoPRequired, bound(proof{claims: map[string]any{"htm": "GET"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"iat 6 minutes old", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			return bound(proof{claims: map[string]any{"iat": f.iss.Now().Add(-6 * time.Minute).Unix()}})(t, f)
		}, 401, []string{invalidProof}, bodyInvalidProof},
		{"iat 6 minutes ahead", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			return bound(proof{claims: map[string]any{"iat": f.iss.Now().Add(6 * time.Minute).Unix()}})(t, f)
		}, 401, []string{invalidProof}, bodyInvalidProof},
		{"iat 4 minutes old", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			return bound(proof{claims: map[string]any{"iat": f.iss.Now().Add(-4 * time.Minute).Unix()}})(t, f)
		}, 200, nil, okBody},
		{"ath of another token", DPoPRequired, bound(proof{claims: map[string]any{"ath": "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"no ath", DPoPRequired, bound(proof{claims: map[string]any{"ath": nil}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"jwk with private members", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			priv, _ := jose.JSONWebKey{Key: f.key}.MarshalJSON()
			var jwk map[string]any
			_ = json.Unmarshal(priv, &jwk)
			return bound(proof{header: map[string]any{"jwk": jwk}})(t, f)
		}, 401, []string{invalidProof}, bodyInvalidProof},
		{"alg none", DPoPRequired, bound(proof{alg: "none"}), 401, []string{invalidProof}, bodyInvalidProof},
		{"alg HS256", DPoPRequired, bound(proof{alg: "HS256", hmacKey: []byte("0123456789abcdef0123456789abcdef")}), 401, []string{invalidProof}, bodyInvalidProof},
		{"typ JWT", DPoPRequired, bound(proof{header: map[string]any{"typ": "JWT"}}), 401, []string{invalidProof}, bodyInvalidProof},
		{"DPoP scheme without a token", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall { return dpopCall{authz: "DPoP"} },
			400, []string{dpopChallenge(`error="invalid_request", resource_metadata="` + metadataURL + `", error_description="Malformed DPoP authorization header"`)}, bodyInvalidRequest},
		{"insufficient scope: DPoP step-up", DPoPRequired, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, "mcp", "tools:call")
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}
		}, 403, []string{dpopChallenge(`error="insufficient_scope", scope="mcp tools:call weather:read", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`)}, bodyInsufficient},
		// Off: nothing changes for bearer clients; DPoP is no credential.
		{"off: DPoP scheme is no credentials", DPoPOff, func(t testing.TB, f *dpopFixture) dpopCall {
			tok := f.boundToken(t, f.jkt, allScopes...)
			return dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}
		}, 401, []string{offerBearer}, bodyUnauthorized},
		{"off: bound token as Bearer", DPoPOff, func(t testing.TB, f *dpopFixture) dpopCall {
			return dpopCall{authz: "Bearer " + f.boundToken(t, f.jkt, allScopes...)}
		}, 401, []string{bearerInv}, bodyInvalidToken},
	}
	fixtures := map[DPoPPolicy]*dpopFixture{} // one per policy: issuers are slow to make
	for _, p := range []DPoPPolicy{DPoPOff, DPoPAllowed, DPoPRequired} {
		fixtures[p] = newDPoPFixture(t, p, nil)
	}
	for _, tt := range tests {
		for _, rev := range []string{legacyRev, modernRev} {
			t.Run(tt.name+"/"+rev, func(t *testing.T) {
				f := fixtures[tt.policy]
				c := tt.call(t, f)
				c.rev = rev
				got := f.do(t, c)
				if got.status != tt.status || !slices.Equal(got.wwwAuth, tt.wwwAuth) {
					t.Fatalf("got %d\n%s\nwant %d\n%s", got.status, strings.Join(got.wwwAuth, "\n"), tt.status, strings.Join(tt.wwwAuth, "\n"))
				}
				if tt.status == 200 && !strings.Contains(got.body, tt.body) || tt.status != 200 && got.body != tt.body {
					t.Errorf("body = %s, want %s", got.body, tt.body)
				}
				if tt.status == 200 && tt.body == okBody && !strings.Contains(got.body, `"jkt":"`+f.jkt+`"`) {
					t.Errorf("principal = %s, want jkt %s", got.body, f.jkt)
				}
			})
		}
	}
}

// TestDPoPReplayAcrossReplicas: two middleware instances sharing one
// replay store refuse a proof the other accepted; with separate stores
// (the default) the second replica would accept it.
func TestDPoPReplayAcrossReplicas(t *testing.T) {
	store := dpop.NewMemoryReplayStore(100, nil)
	share := func(c *Config) { c.DPoP.Proof.ReplayStore = store }
	a := newDPoPFixture(t, DPoPRequired, share)
	b := a.replica(t, share)
	tok := a.boundToken(t, a.jkt, allScopes...)
	c := dpopCall{authz: "DPoP " + tok, proofs: []string{a.sign(t, proof{}, tok)}}
	if got := a.do(t, c); got.status != 200 {
		t.Fatalf("first use: %d %v", got.status, got.wwwAuth)
	}
	for name, f := range map[string]*dpopFixture{"same replica": a, "other replica": b} {
		if got := f.do(t, c); got.status != 401 || !slices.Equal(got.wwwAuth, []string{invalidProof}) {
			t.Errorf("%s: replay got %d %q, want 401 invalid_dpop_proof", name, got.status, got.wwwAuth)
		}
	}
	lone := a.replica(t, nil)
	if got := lone.do(t, c); got.status != 200 {
		t.Errorf("unshared store: got %d, want 200 (the reason to share one)", got.status)
	}
}

// replica returns a second Middleware over the same issuer and keys.
func (f *dpopFixture) replica(t testing.TB, mutate func(*Config)) *dpopFixture {
	t.Helper()
	g := *f
	cfg := f.m.cfg
	cfg.DPoP.Proof.ReplayStore = nil
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Metadata.DPoPSigningAlgValuesSupported, cfg.Metadata.DPoPBoundAccessTokensRequired = nil, false
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.m = m
	g.srv = newServer(t, m)
	return &g
}

// TestDPoPNonce: with a NonceSecret, a proof without nonce gets 401
// use_dpop_nonce and a DPoP-Nonce; the same request with it succeeds.
func TestDPoPNonce(t *testing.T) {
	f := newDPoPFixture(t, DPoPRequired, func(c *Config) {
		c.DPoP.Proof.NonceSecret = []byte("0123456789abcdef0123456789abcdef")
	})
	tok := f.boundToken(t, f.jkt, allScopes...)
	got := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}})
	if got.status != 401 || !slices.Equal(got.wwwAuth, []string{useNonce}) || got.body != bodyUseNonce || got.nonce == "" {
		t.Fatalf("without nonce: %d %q %s nonce %q", got.status, got.wwwAuth, got.body, got.nonce)
	}
	got2 := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{claims: map[string]any{"nonce": got.nonce}}, tok)}})
	if got2.status != 200 || got2.nonce != "" {
		t.Fatalf("with nonce: %d %q, DPoP-Nonce %q (want none: the nonce is current)", got2.status, got2.wwwAuth, got2.nonce)
	}
	// One slot later the nonce is still accepted, and the answer hands
	// out the current one (RFC 9449 §9), which the next proof uses
	// without a use_dpop_nonce round trip; two slots later the old one
	// is refused.
	f.iss.Advance(5 * time.Minute)
	prev := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{claims: map[string]any{"nonce": got.nonce}}, tok)}})
	if prev.status != 200 || prev.nonce == "" || prev.nonce == got.nonce {
		t.Fatalf("previous slot's nonce: %d %q, DPoP-Nonce %q, want 200 with a new nonce", prev.status, prev.wwwAuth, prev.nonce)
	}
	f.iss.Advance(5 * time.Minute)
	next := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{claims: map[string]any{"nonce": prev.nonce}}, tok)}})
	old := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{claims: map[string]any{"nonce": got.nonce}}, tok)}})
	if next.status != 200 || old.status != 401 || !slices.Equal(old.wwwAuth, []string{useNonce}) {
		t.Fatalf("two slots later: handed-out nonce %d, first nonce %d %q", next.status, old.status, old.wwwAuth)
	}
	got3 := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{claims: map[string]any{"nonce": "stale"}}, tok)}})
	if got3.status != 401 || !slices.Equal(got3.wwwAuth, []string{useNonce}) {
		t.Fatalf("bad nonce: %d %q", got3.status, got3.wwwAuth)
	}
}

// TestDPoPStoreDown: a failing replay store refuses the request with 503,
// no challenge, and Retry-After (fail closed; not the client's fault).
func TestDPoPStoreDown(t *testing.T) {
	f := newDPoPFixture(t, DPoPRequired, func(c *Config) { c.DPoP.Proof.ReplayStore = failingReplayStore{} })
	tok := f.boundToken(t, f.jkt, allScopes...)
	got := f.do(t, dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}})
	if got.status != 503 || got.wwwAuth != nil || got.body != bodyUnavailable {
		t.Fatalf("got %d %q %s", got.status, got.wwwAuth, got.body)
	}
}

type failingReplayStore struct{}

func (failingReplayStore) Claim(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("store down")
}

// TestDPoPMetadata: the metadata publishes the algorithms, and the
// requirement only when required (RFC 9728 §2); inconsistent metadata is a
// configuration error.
func TestDPoPMetadata(t *testing.T) {
	for _, tt := range []struct {
		policy DPoPPolicy
		want   string
	}{
		{DPoPOff, ""},
		{DPoPAllowed, `"dpop_signing_alg_values_supported":["ES256","ES384","ES512","PS256","PS384","PS512","RS256","RS384","RS512","EdDSA"]`},
		{DPoPRequired, `"dpop_bound_access_tokens_required":true`},
	} {
		f := newDPoPFixture(t, tt.policy, nil)
		rec := httptestGet(t, f.m.MetadataHandler())
		if tt.want == "" && strings.Contains(rec, "dpop") || tt.want != "" && !strings.Contains(rec, tt.want) {
			t.Errorf("policy %d: metadata %s, want %s", tt.policy, rec, tt.want)
		}
	}
	bad := []func(*Config){
		func(c *Config) { c.DPoP.Policy = DPoPOff; c.Metadata.DPoPSigningAlgValuesSupported = []string{"ES256"} },
		func(c *Config) { c.Metadata.DPoPSigningAlgValuesSupported = []string{"RS256"} },
		func(c *Config) { c.DPoP.Policy = DPoPAllowed; c.Metadata.DPoPBoundAccessTokensRequired = true },
		func(c *Config) { c.DPoP.Policy = 7 },
		func(c *Config) { c.DPoP.Proof.Window = -1 },
	}
	for i, mut := range bad {
		f := newDPoPFixture(t, DPoPAllowed, nil)
		cfg := f.m.cfg
		cfg.Metadata.DPoPSigningAlgValuesSupported, cfg.Metadata.DPoPBoundAccessTokensRequired = nil, false
		mut(&cfg)
		if _, err := New(cfg); !errors.Is(err, errConfig) {
			t.Errorf("bad config %d: err = %v, want errConfig", i, err)
		}
	}
}

// FuzzDPoPHTTP sends fuzzed DPoP proofs and Authorization values over
// real HTTP. Nothing panics, every answer is one of the fixed ones, and a
// request is authorized only with a proof by the token's key.
func FuzzDPoPHTTP(f *testing.F) {
	fx := newDPoPFixture(f, DPoPAllowed, nil)
	tok := fx.boundToken(f, fx.jkt, allScopes...)
	f.Add("DPoP "+tok, fx.sign(f, proof{}, tok), "")
	f.Add("DPoP "+tok, fx.sign(f, proof{claims: map[string]any{"htu": resource + "?q"}}, tok), "")
	f.Add("DPoP "+tok, fx.sign(f, proof{alg: "none"}, tok), "")
	f.Add("Bearer "+tok, "", "")
	f.Add("DPoP "+tok, "a.b.c", "x.y.z")
	f.Add("dpop  "+tok, fx.sign(f, proof{key: fx.other}, tok), "")
	known := map[string]bool{offerBearer: true, offerDPoP: true, invalidProof: true, dpopInvalid: true, bearerInv: true}
	f.Fuzz(func(t *testing.T, authz, p1, p2 string) {
		var proofs []string
		for _, p := range []string{p1, p2} {
			if p != "" {
				proofs = append(proofs, p)
			}
		}
		if !validHeaderValue(authz) || !validHeaderValue(p1) || !validHeaderValue(p2) {
			return
		}
		got := fx.do(t, dpopCall{authz: authz, proofs: proofs})
		switch got.status {
		case 200:
			if !strings.Contains(got.body, `"jkt":"`+fx.jkt+`"`) && !strings.Contains(got.body, `"dpop":false`) {
				t.Fatalf("authorized %q with %q: %s", authz, proofs, got.body)
			}
		case 400, 401, 403:
			for _, c := range got.wwwAuth {
				if got.status == 401 && !known[c] {
					t.Fatalf("unexpected challenge %q", c)
				}
			}
		default:
			t.Fatalf("status %d", got.status)
		}
	})
}

// validHeaderValue reports whether net/http would send s as a header
// value (the fuzzer's bytes are otherwise refused by the client).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}

// TestDPoPIntrospection: the binding is checked for introspected tokens
// too: cnf.jkt of the introspection response (RFC 9449 §6.2) must match
// the proof key, and such a token is refused as Bearer.
func TestDPoPIntrospection(t *testing.T) {
	f := newDPoPFixture(t, DPoPAllowed, nil)
	id, secret := f.iss.IntrospectionClientID, f.iss.IntrospectionSecret
	in, err := introspect.New(introspect.Config{
		Issuer: f.iss.URL, Endpoint: f.iss.IntrospectionURL, Audiences: []string{resource},
		ClientID: id, ClientSecret: secret, Now: f.iss.Now, AllowConfirmation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := f.replica(t, func(c *Config) { c.Validator = in })
	tok := f.iss.Token(t, authtest.Token{Scopes: allScopes, Opaque: true, Claims: map[string]any{"cnf": map[string]any{"jkt": f.jkt}, "token_type": "DPoP"}})
	for _, tt := range []struct {
		name    string
		c       dpopCall
		status  int
		wwwAuth []string
	}{
		{"proof by the bound key", dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{}, tok)}}, 200, nil},
		{"proof by another key", dpopCall{authz: "DPoP " + tok, proofs: []string{f.sign(t, proof{key: f.other}, tok)}}, 401, []string{dpopInvalid, offerBearer}},
		{"as Bearer", dpopCall{authz: "Bearer " + tok}, 401, []string{bearerInv, offerDPoP}},
	} {
		got := g.do(t, tt.c)
		if got.status != tt.status || !slices.Equal(got.wwwAuth, tt.wwwAuth) {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, got.status, got.wwwAuth, tt.status, tt.wwwAuth)
		}
	}
}

// TestDPoPTargetURI: requests to the resource's path are checked against
// the canonical resource URI; other routes (Protect) against its origin
// and the path the client sent, even behind a path-stripping router. The
// Host header never counts.
func TestDPoPTargetURI(t *testing.T) {
	f := newDPoPFixture(t, DPoPRequired, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.m.Handler(principalHandler()))
	mux.Handle("/api/", http.StripPrefix("/api", f.m.Protect()(principalHandler())))
	srv := newRawServer(t, mux)
	tok := f.boundToken(t, f.jkt, "mcp", "tools:read")
	for _, tt := range []struct {
		path, htu string
		status    int
	}{
		{"/mcp", resource, 200},
		{"/api/notes", "https://mcp.example.com/api/notes", 200},
		{"/api/notes", "https://mcp.example.com/notes", 401},
		{"/api/notes", resource, 401},
		{"/mcp", "http://" + strings.TrimPrefix(srv.URL, "http://") + "/mcp", 401}, // the Host
	} {
		method := http.MethodPost
		if tt.path != "/mcp" {
			method = http.MethodGet
		}
		req, _ := http.NewRequest(method, srv.URL+tt.path, strings.NewReader(rpcBody(legacyRev, "tools/list", "")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "DPoP "+tok)
		req.Header.Set("DPoP", f.sign(t, proof{claims: map[string]any{"htu": tt.htu, "htm": method}}, tok))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s with htu %s: %d %q, want %d", tt.path, tt.htu, resp.StatusCode, resp.Header.Values("WWW-Authenticate"), tt.status)
		}
	}
}
