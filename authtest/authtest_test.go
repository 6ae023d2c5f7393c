package authtest_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
)

// get fetches u with c and returns the response and its body.
func get(t *testing.T, c *http.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %s", u, err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %s", u, err.Error())
	}
	return resp, b
}

func getJSON(t *testing.T, c *http.Client, u string) (int, map[string]any) {
	t.Helper()
	resp, b := get(t, c, u)
	var m map[string]any
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("GET %s: body is not JSON: %s", u, err.Error())
		}
	}
	return resp.StatusCode, m
}

func pathOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Path
}

func TestMetadataURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		path      string
		wantPaths []string
	}{
		{"no path", "", []string{
			"/.well-known/oauth-authorization-server",
			"/.well-known/openid-configuration",
		}},
		{"tenant", "/tenant1", []string{
			"/.well-known/oauth-authorization-server/tenant1",
			"/.well-known/openid-configuration/tenant1",
			"/tenant1/.well-known/openid-configuration",
		}},
		{"trailing slash", "/tenant1/", []string{
			"/.well-known/oauth-authorization-server/tenant1/",
			"/.well-known/openid-configuration/tenant1/",
			"/tenant1/.well-known/openid-configuration",
		}},
	}
	for _, tt := range tests {
		for _, tls := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/http", true: "/https"}[tls], func(t *testing.T) {
				t.Parallel()
				iss := authtest.NewIssuer(t, authtest.IssuerConfig{Path: tt.path, TLS: tls})
				if want := map[bool]string{false: "http://", true: "https://"}[tls]; !strings.HasPrefix(iss.URL, want) {
					t.Errorf("URL() = %q, want prefix %q", iss.URL, want)
				}
				if !strings.HasSuffix(iss.URL, tt.path) || pathOf(t, iss.URL) != tt.path {
					t.Errorf("URL() = %q, want path %q", iss.URL, tt.path)
				}
				var gotPaths []string
				for _, u := range iss.MetadataURLs {
					gotPaths = append(gotPaths, pathOf(t, u))
					status, m := getJSON(t, iss.Client, u)
					if status != http.StatusOK {
						t.Fatalf("GET %s: status %d, want 200", u, status)
					}
					checkMetadata(t, iss, m)
				}
				if !slices.Equal(gotPaths, tt.wantPaths) {
					t.Errorf("MetadataURLs paths = %q, want %q", gotPaths, tt.wantPaths)
				}
				if got, want := iss.Requests(iss.MetadataURLs...), int64(len(tt.wantPaths)); got != want {
					t.Errorf("MetadataFetches() = %d, want %d", got, want)
				}
			})
		}
	}
}

func checkMetadata(t *testing.T, iss *authtest.Issuer, m map[string]any) {
	t.Helper()
	base := strings.TrimSuffix(iss.URL, "/")
	want := map[string]any{
		"issuer":                           iss.URL,
		"jwks_uri":                         iss.JWKSURL,
		"authorization_endpoint":           base + "/authorize",
		"token_endpoint":                   base + "/token",
		"introspection_endpoint":           iss.IntrospectionURL,
		"response_types_supported":         []any{"code"},
		"code_challenge_methods_supported": []any{"S256"},
	}
	for k, v := range want {
		got, _ := json.Marshal(m[k])
		w, _ := json.Marshal(v)
		if string(got) != string(w) {
			t.Errorf("metadata %q = %s, want %s", k, got, w)
		}
	}
	if iss.JWKSURL != base+"/jwks" || iss.IntrospectionURL != base+"/introspect" {
		t.Errorf("JWKSURL() = %q, IntrospectionURL() = %q, want under %q", iss.JWKSURL, iss.IntrospectionURL, base)
	}
}

func TestHostileDiscovery(t *testing.T) {
	t.Parallel()
	const mixUp = "https://honest.example"
	tests := []struct {
		name       string
		cfg        authtest.IssuerConfig
		wantStatus []int  // per MetadataURLs entry
		wantIssuer string // "" => iss.URL
		wantExtra  string // value of "jwks_uri" when overridden
	}{
		{"mix-up", authtest.IssuerConfig{Path: "/t", MixUpIssuer: mixUp}, []int{200, 200, 200}, mixUp, ""},
		{"no rfc8414", authtest.IssuerConfig{Path: "/t", DisableRFC8414: true}, []int{404, 200, 200}, "", ""},
		{"no oidc", authtest.IssuerConfig{Path: "/t", DisableOIDC: true}, []int{200, 404, 404}, "", ""},
		{"neither", authtest.IssuerConfig{DisableOIDC: true, DisableRFC8414: true}, []int{404, 404}, "", ""},
		{"extra", authtest.IssuerConfig{ExtraMetadata: map[string]any{"jwks_uri": "https://evil.example/jwks"}},
			[]int{200, 200}, "", "https://evil.example/jwks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			iss := authtest.NewIssuer(t, tt.cfg)
			urls := iss.MetadataURLs
			if len(urls) != len(tt.wantStatus) {
				t.Fatalf("got %d metadata URLs, want %d", len(urls), len(tt.wantStatus))
			}
			for n, u := range urls {
				status, m := getJSON(t, iss.Client, u)
				if status != tt.wantStatus[n] {
					t.Errorf("GET %s: status %d, want %d", u, status, tt.wantStatus[n])
				}
				if status != http.StatusOK {
					continue
				}
				wantIss := tt.wantIssuer
				if wantIss == "" {
					wantIss = iss.URL
				}
				if m["issuer"] != wantIss {
					t.Errorf("issuer = %v, want %q", m["issuer"], wantIss)
				}
				if tt.wantExtra != "" && m["jwks_uri"] != tt.wantExtra {
					t.Errorf("jwks_uri = %v, want %q", m["jwks_uri"], tt.wantExtra)
				}
			}
		})
	}
}

func fetchJWKS(t *testing.T, iss *authtest.Issuer) jose.JSONWebKeySet {
	t.Helper()
	resp, b := get(t, iss.Client, iss.JWKSURL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET jwks: status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatalf("jwks: %s", err.Error())
	}
	if strings.Contains(string(b), `"d"`) {
		t.Errorf("jwks leaks private key material: %s", b)
	}
	return set
}

func kids(keys []jose.JSONWebKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.KeyID)
	}
	return out
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{TLS: true})
	set := fetchJWKS(t, iss)
	if got, want := kids(set.Keys), []string{"es256-1", "rs256-1", "eddsa-1"}; !slices.Equal(got, want) {
		t.Fatalf("kids = %q, want %q", got, want)
	}
	for _, k := range set.Keys {
		if k.Use != "sig" || !k.IsPublic() {
			t.Errorf("key %s: use %q, public %v; want sig, true", k.KeyID, k.Use, k.IsPublic())
		}
		switch key := k.Key.(type) {
		case *ecdsa.PublicKey:
			if k.Algorithm != "ES256" || key.Curve != elliptic.P256() {
				t.Errorf("key %s: alg %s curve %s, want ES256 P-256", k.KeyID, k.Algorithm, key.Curve.Params().Name)
			}
		case *rsa.PublicKey:
			if k.Algorithm != "RS256" || key.N.BitLen() != 2048 {
				t.Errorf("key %s: alg %s bits %d, want RS256 2048", k.KeyID, k.Algorithm, key.N.BitLen())
			}
		case ed25519.PublicKey:
			if k.Algorithm != "EdDSA" {
				t.Errorf("key %s: alg %s, want EdDSA", k.KeyID, k.Algorithm)
			}
		default:
			t.Errorf("key %s: unexpected type %T", k.KeyID, key)
		}
	}
	if got := kids(iss.Keys()); !slices.Equal(got, kids(set.Keys)) {
		t.Errorf("Keys() = %q, JWKS = %q", got, kids(set.Keys))
	}
	if iss.Requests(iss.JWKSURL) != 1 || iss.Requests("/jwks") != 1 || iss.Requests() != 1 {
		t.Errorf("Requests(JWKSURL) = %d, Requests() = %d, want 1, 1", iss.Requests(iss.JWKSURL), iss.Requests())
	}
	resp, _ := get(t, iss.Client, strings.TrimSuffix(iss.URL, "/")+"/nope")
	if resp.StatusCode != http.StatusNotFound || iss.Requests("/nope") != 1 {
		t.Errorf("unknown path: status %d, count %d; want 404, 1", resp.StatusCode, iss.Requests("/nope"))
	}
	post, err := iss.Client.Post(iss.JWKSURL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST jwks: status %d, want 405", post.StatusCode)
	}
}

func TestAddRemoveKeys(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	if tok := decode(t, iss.Token(t, authtest.Token{})); tok.header["kid"] != "es256-1" {
		t.Fatalf("token kid = %v, want es256-1", tok.header["kid"])
	}
	const newKID = "es256-2"
	iss.AddKey(authtest.GenerateKey(jose.ES256, newKID)) // rotates the signing key
	tok := decode(t, iss.Token(t, authtest.Token{}))
	if tok.header["kid"] != newKID {
		t.Errorf("token kid = %v, want %q", tok.header["kid"], newKID)
	}
	verify(t, iss.Keys(), tok.raw)
	if got, want := kids(fetchJWKS(t, iss).Keys), []string{"es256-1", "rs256-1", "eddsa-1", "es256-2"}; !slices.Equal(got, want) {
		t.Errorf("after AddKey: kids = %q, want %q", got, want)
	}

	if !iss.RemoveKey(newKID) || iss.RemoveKey("no-such-kid") {
		t.Errorf("RemoveKey: want true for a published kid, false otherwise")
	}
	if got, want := kids(fetchJWKS(t, iss).Keys), []string{"es256-1", "rs256-1", "eddsa-1"}; !slices.Equal(got, want) {
		t.Errorf("after RemoveKey: kids = %q, want %q", got, want)
	}
	// The removed key still signs, so validators see an unknown kid.
	if tok := decode(t, iss.Token(t, authtest.Token{})); tok.header["kid"] != newKID {
		t.Errorf("token after RemoveKey: kid %v, want %q", tok.header["kid"], newKID)
	}

	enc := authtest.GenerateKey(jose.ES256, "enc-key")
	enc.Use = "enc"
	weakKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weak := jose.JSONWebKey{Key: weakKey, KeyID: "weak", Algorithm: "RS256", Use: "sig"}
	dup := authtest.GenerateKey(jose.ES256, "es256-1")
	iss.AddKey(enc)
	iss.AddKey(weak.Public())
	iss.AddKey(dup)
	set := fetchJWKS(t, iss)
	if got, want := kids(set.Keys), []string{"es256-1", "rs256-1", "eddsa-1", "enc-key", "weak", "es256-1"}; !slices.Equal(got, want) {
		t.Fatalf("after AddKey: kids = %q, want %q", got, want)
	}
	if set.Keys[3].Use != "enc" {
		t.Errorf("enc key use = %q, want enc", set.Keys[3].Use)
	}
	if bits := set.Keys[4].Key.(*rsa.PublicKey).N.BitLen(); bits != 1024 {
		t.Errorf("weak key has %d bits, want 1024", bits)
	}
	// A token signed by the weak key verifies against the published key.
	verify(t, []jose.JSONWebKey{set.Keys[4]}, iss.Token(t, authtest.Token{Key: weak}))
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	var wg sync.WaitGroup
	for n := range 8 {
		wg.Go(func() {
			switch n % 4 {
			case 0:
				iss.AddKey(authtest.GenerateKey(jose.ES256, "es256-new"))
			case 1:
				_ = iss.Token(t, authtest.Token{})
			case 2:
				fetchJWKS(t, iss)
			case 3:
				iss.SetFault("", iss.JWKSURL)
				iss.Advance(time.Second)
			}
		})
	}
	wg.Wait()
	if got := len(iss.Keys()); got != 5 {
		t.Errorf("len(Keys()) = %d, want 5", got)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	if got := iss.Now(); !got.Equal(want) {
		t.Errorf("Now() = %s, want %s", got, want)
	}
	iss.Advance(time.Hour)
	if got := iss.Now(); !got.Equal(want.Add(time.Hour)) {
		t.Errorf("after Advance: Now() = %s, want %s", got, want.Add(time.Hour))
	}
	pinned := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	iss2 := authtest.NewIssuer(t, authtest.IssuerConfig{Now: func() time.Time { return pinned }})
	if got := decode(t, iss2.Token(t, authtest.Token{})).claims["iat"]; got != float64(pinned.Unix()) {
		t.Errorf("iat = %v, want %d", got, pinned.Unix())
	}
}
