package audit_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// proxyChecks are the PROXY-* checks.
var proxyChecks = []string{audit.ProxyNoIdentity, audit.ProxyClientToken, audit.ProxyForged, audit.ProxyAudience, audit.ProxyMetadata}

// assertionKey is a proxy's assertion key and its public JWK (kid: the
// RFC 7638 thumbprint, as mcpguard proxy names it).
func assertionKey(t *testing.T) (*ecdsa.PrivateKey, jose.JSONWebKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: &k.PublicKey, Algorithm: string(jose.ES256), Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return k, jwk
}

// upstreamKind is how a simulated upstream authenticates.
type upstreamKind int

const (
	upstreamGood        upstreamKind = iota // verifies the proxy's assertion for itself
	upstreamOpen                            // no authentication at all
	upstreamPassthrough                     // accepts the client's tokens (issued for the public URL)
	upstreamAnyAudience                     // verifies the proxy's signature, not the audience
	upstreamHeaders                         // trusts X-Mcpguard-Subject from anyone
)

// startUpstream starts an example server as the upstream behind a proxy
// at e.mcpURL.
func startUpstream(t *testing.T, e *env, kind upstreamKind, jwk jose.JSONWebKey) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	up := "http://" + ts.Listener.Addr().String() + "/mcp"
	proxyIss := strings.TrimSuffix(e.mcpURL, "/mcp")
	var v middleware.TokenValidator
	switch kind {
	case upstreamPassthrough:
		var err error
		v, err = validate.New(validate.Config{
			Issuers:   []validate.Issuer{{Issuer: e.issuer, Keys: &validate.StaticKeys{Set: e.as.PublicKeys()}}},
			Audiences: []string{up, e.mcpURL},
		})
		if err != nil {
			t.Fatal(err)
		}
	default:
		auds := []string{up}
		if kind == upstreamAnyAudience {
			auds = append(auds, "https://mcpguard-audit.invalid/another-upstream")
		}
		var err error
		v, err = validate.New(validate.Config{
			Issuers:   []validate.Issuer{{Issuer: proxyIss, Keys: &validate.StaticKeys{Set: []jose.JSONWebKey{jwk}}}},
			Audiences: auds,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(server.Config{Resource: up, AuthorizationServers: []string{proxyIss}, Validator: v, Scopes: []string{baseScope}})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	switch kind {
	case upstreamOpen, upstreamHeaders:
		// An upstream that trusts its network, or the proxy's headers: it
		// serves with a token of its own making.
		good, err := e.as.IssueToken("svc", "t1", clientID, e.mcpURL, []string{baseScope, readScope})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := server.New(server.Config{Resource: e.mcpURL, AuthorizationServers: []string{e.issuer}, Validator: e.validator, Scopes: []string{baseScope}})
		if err != nil {
			t.Fatal(err)
		}
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if kind == upstreamHeaders && r.Header.Get("X-Mcpguard-Subject") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			r.Header.Set("Authorization", "Bearer "+good)
			r.URL.Path = "/mcp"
			pub.ServeHTTP(w, r)
		})
	}
	ts.Config.Handler = h
	ts.Start()
	t.Cleanup(ts.Close)
	return up
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TestProxyChecksSimulated judges upstreams broken one way at a time,
// behind the example server standing in for the proxy's public side (the
// PROXY-* checks call only the upstream and read the public metadata).
func TestProxyChecksSimulated(t *testing.T) {
	tests := []struct {
		name       string
		kind       upstreamKind
		wrapPublic func(up string) func(*env, http.Handler) http.Handler
		want       []string // failing PROXY-* checks
		skipped    []string
	}{
		{name: "assertion-verifying upstream", kind: upstreamGood},
		{name: "open upstream", kind: upstreamOpen, want: []string{audit.ProxyNoIdentity, audit.ProxyClientToken, audit.ProxyForged, audit.ProxyAudience}},
		{name: "header-trusting upstream", kind: upstreamHeaders, want: []string{audit.ProxyNoIdentity}, skipped: []string{audit.ProxyAudience}},
		{name: "passthrough upstream", kind: upstreamPassthrough, want: []string{audit.ProxyClientToken}, skipped: []string{audit.ProxyAudience}},
		{name: "no audience check", kind: upstreamAnyAudience, want: []string{audit.ProxyAudience}},
		{name: "public metadata names the upstream", kind: upstreamGood, wrapPublic: func(up string) func(*env, http.Handler) http.Handler {
			return func(_ *env, next http.Handler) http.Handler {
				return editJSON(next, "/.well-known/oauth-protected-resource", func(m map[string]any) {
					m["resource_documentation"] = up
				})
			}
		}, want: []string{audit.ProxyMetadata}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, jwk := assertionKey(t)
			var up string
			build := exampleServer(t, nil)
			if tt.wrapPublic != nil {
				inner := build
				build = func(e *env) http.Handler { return tt.wrapPublic(up)(e, inner(e)) }
			}
			e := newEnv(t, func(e *env) http.Handler {
				up = startUpstream(t, e, tt.kind, jwk)
				return build(e)
			}, nil)
			signer, err := audit.ParseAssertionKey(keyPEM(t, key))
			if err != nil {
				t.Fatal(err)
			}
			rep, _ := runAudit(t, e, func(c *audit.Config) {
				c.Token2, c.CallTools = "", false
				c.Proxy = audit.Proxy{Upstream: up, AssertionKey: signer}
			})
			var failed []string
			for _, id := range proxyChecks {
				r := result(rep, id)
				switch {
				case r.Verdict == audit.Fail:
					failed = append(failed, id)
				case r.Verdict == audit.Skip && !slices.Contains(tt.skipped, id):
					t.Errorf("%s skipped (%s)", id, r.Detail)
				case r.Verdict == audit.Pass && slices.Contains(tt.skipped, id):
					t.Errorf("%s passed, want skip", id)
				}
			}
			if testing.Verbose() {
				for _, id := range proxyChecks {
					r := result(rep, id)
					t.Logf("%s %s %s %v", id, r.Verdict, r.Detail, r.Evidence)
				}
			}
			if !slices.Equal(failed, tt.want) {
				t.Errorf("failing PROXY checks %v, want %v\n%s", failed, tt.want, dump(rep))
			}
		})
	}
}
