package proxy_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestAssertionKeyRotation follows the procedure of docs/proxy.md,
// "Rotating the assertion key", with a new proxy from a new YAML file at
// each step, on the same address, in front of a go-sdk upstream that
// verifies assertions against the proxy's JWK Set (mcpguard with a
// validate/jwks source): step 1 signs with A and publishes B (a public
// key file); step 2 signs with B and publishes A; step 3 signs with B
// alone. Each JWK Set holds exactly the keys named, the signing key
// first; each assertion's kid is the signing key's; the upstream accepts
// every call, and fetches the JWK Set only once: B was known before it
// signed.
func TestAssertionKeyRotation(t *testing.T) {
	dir := t.TempDir()
	_, kidA := writeKey(t, dir, "a.pem")
	_, kidB := writeKey(t, dir, "b.pem")
	pubB := filepath.Join(dir, "b.pub.pem")
	writePublic(t, filepath.Join(dir, "b.pem"), pubB)

	asTS := httptest.NewUnstartedServer(nil)
	upTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	proxyURL := "http://" + pxTS.Listener.Addr().String()
	resource := proxyURL + "/mcp"
	upstream := "http://" + upTS.Listener.Addr().String() + "/mcp"
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	// The proxy's address serves the proxy of the current step.
	var current atomic.Pointer[proxy.Proxy]
	var jwksGets atomic.Int64
	pxTS.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == proxy.DefaultJWKSPath {
			jwksGets.Add(1)
		}
		current.Load().ServeHTTP(w, r)
	})
	pxTS.Start()
	t.Cleanup(pxTS.Close)

	var mu sync.Mutex
	var kids []string   // of the assertions the upstream received
	var up http.Handler // built once the first proxy serves its JWK Set
	upTS.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		kids = append(kids, jwsKID(t, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		mu.Unlock()
		up.ServeHTTP(w, r)
	})
	t.Cleanup(upTS.Close)

	tok, err := as.IssueToken("alice", "acme", testClient, resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, keyFile string
		publish       []string
		wantSet       []string // kids of the JWK Set, in order
		wantKID       string
	}{
		{"1 publish the next key", "a.pem", []string{pubB}, []string{kidA, kidB}, kidA},
		{"2 sign with it, publish the previous", "b.pem", []string{filepath.Join(dir, "a.pem")}, []string{kidB, kidA}, kidB},
		{"3 drop the previous", "b.pem", nil, []string{kidB}, kidB},
	}
	for i, st := range steps {
		publish := ""
		if len(st.publish) > 0 {
			publish = "\n    publish_key_files: [" + strings.Join(st.publish, ", ") + "]"
		}
		file := filepath.Join(dir, fmt.Sprintf("step%d.yaml", i+1))
		yaml := fmt.Sprintf("routes:\n  - resource: %s\n    upstream: %s\n    issuers: [%s]\n    scopes: [%s]\n    validation: {tenant_claim: tenant}\n"+
			"assertion:\n    issuer: %s\n    key_file: %s%s\n", resource, upstream, issuer, baseScope, proxyURL, filepath.Join(dir, st.keyFile), publish)
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := proxy.Load(file, func(string) string { return "" })
		if err != nil {
			t.Fatalf("step %s: Load: %v", st.name, err)
		}
		px, err := proxy.New(cfg)
		if err != nil {
			t.Fatalf("step %s: New: %v", st.name, err)
		}
		t.Cleanup(func() { px.Close() })
		ctx := testContext(t)
		if err := px.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if old := current.Swap(px); old != nil {
			old.Close()
		}
		if up == nil {
			up = goSDKUpstream(t, proxyURL+proxy.DefaultJWKSPath, proxyURL, upstream, true)
			upTS.Start()
		}

		resp := do(t, http.MethodGet, proxyURL+proxy.DefaultJWKSPath, "", nil)
		var set jose.JSONWebKeySet
		err = json.NewDecoder(resp.Body).Decode(&set)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range set.Keys {
			got = append(got, k.KeyID)
			if !k.IsPublic() || k.Use != "sig" || k.Algorithm != "ES256" {
				t.Errorf("step %s: JWK %s: public %v, use %q, alg %q", st.name, k.KeyID, k.IsPublic(), k.Use, k.Algorithm)
			}
		}
		if !slices.Equal(got, st.wantSet) {
			t.Errorf("step %s: JWK Set kids %q, want %q", st.name, got, st.wantSet)
		}

		env := &testEnv{resource: resource}
		cs := env.connect(ctx, t, tok, nil)
		if w := callWhoami(ctx, t, cs, "whoami"); w.Subject != "alice" || w.Issuer != proxyURL {
			t.Errorf("step %s: upstream principal %+v", st.name, w)
		}
		cs.Close()
		mu.Lock()
		for _, k := range kids {
			if k != st.wantKID {
				t.Errorf("step %s: an assertion signed under kid %q, want %q", st.name, k, st.wantKID)
			}
		}
		n := len(kids)
		kids = nil
		mu.Unlock()
		if n == 0 {
			t.Errorf("step %s: the upstream received nothing", st.name)
		}
	}
	// Step 1's fetch (the JWK Set GET above are the test's own: one per
	// step) was the upstream's only one.
	if n := jwksGets.Load() - int64(len(steps)); n != 1 {
		t.Errorf("the upstream fetched the JWK Set %d times, want 1", n)
	}
}

// writeKey writes a new P-256 private key (PKCS #8) to dir/name and
// returns it with its RFC 7638 thumbprint.
func writeKey(t *testing.T, dir, name string) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	tp, err := (&jose.JSONWebKey{Key: k.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return k, base64.RawURLEncoding.EncodeToString(tp)
}

// writePublic writes the public half of the private key file priv to
// pub as a "PUBLIC KEY" PEM.
func writePublic(t *testing.T, priv, pub string) {
	t.Helper()
	b, err := os.ReadFile(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(k.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// jwsKID returns the kid of a compact JWS's protected header.
func jwsKID(t *testing.T, tok string) string {
	h, _, ok := strings.Cut(tok, ".")
	if !ok {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return ""
	}
	var v struct {
		KID string `json:"kid"`
	}
	_ = json.Unmarshal(b, &v)
	return v.KID
}
