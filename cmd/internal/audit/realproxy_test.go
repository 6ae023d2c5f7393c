package audit_test

import (
	"context"
	"crypto/ecdsa"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/cmd/internal/audit"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// behind is how the go-sdk upstream behind the real mcpguard proxy
// authenticates its callers.
type behind int

const (
	behindAssertion   behind = iota // mcpguard trusting only the proxy's assertions for itself (docs/proxy.md)
	behindOpen                      // nothing: it trusts its network
	behindPassthrough               // mcpguard trusting the authorization server, accepting the public audience too
	behindAnyAudience               // the proxy's assertions, also for another audience
	behindHeaders                   // the proxy's identity headers (headers mode)
)

// proxied is a real mcpguard proxy (package proxy) in front of a go-sdk
// upstream, with a development authorization server, all on 127.0.0.1.
type proxied struct {
	public, upstream string
	key              *ecdsa.PrivateKey
	token            string
}

func startProxied(t *testing.T, kind behind) *proxied {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	upTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	p := &proxied{
		public:   "http://" + pxTS.Listener.Addr().String() + "/mcp",
		upstream: "http://" + upTS.Listener.Addr().String() + "/mcp",
	}
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{p.public}, Scopes: []string{baseScope}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	p.key, _ = assertionKey(t)

	route := proxy.Route{Resource: p.public, Upstream: p.upstream, Issuers: []string{issuer}, Scopes: []string{baseScope}}
	if kind == behindHeaders {
		route.Identity.Mode = "headers"
	}
	px, err := proxy.New(proxy.Config{Routes: []proxy.Route{route}, Assertion: proxy.Assertion{Key: p.key}})
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)

	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	guarded := func(iss string, keys validate.KeySource, auds ...string) http.Handler {
		g, err := mcpguard.New(mcpguard.Config{
			Resource: p.upstream, Issuers: []string{iss}, Keys: map[string]validate.KeySource{iss: keys},
			Validate: validate.Config{Audiences: append([]string{p.upstream}, auds...)},
		})
		if err != nil {
			t.Fatalf("upstream mcpguard.New: %v", err)
		}
		t.Cleanup(func() { g.Close() })
		a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
		if err != nil {
			t.Fatal(err)
		}
		a.Install(s)
		return a.Handler(sdk)
	}
	proxyKeys := func() validate.KeySource {
		k, err := jwks.New(jwks.Config{Issuer: px.AssertionIssuer(), JWKSURL: strings.TrimSuffix(p.public, "/mcp") + px.JWKSPath()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	}
	var h http.Handler
	switch kind {
	case behindAssertion:
		h = guarded(px.AssertionIssuer(), proxyKeys())
	case behindAnyAudience:
		h = guarded(px.AssertionIssuer(), proxyKeys(), "https://mcpguard-audit.invalid/another-upstream")
	case behindPassthrough:
		h = guarded(issuer, &validate.StaticKeys{Set: as.PublicKeys()}, p.public)
	case behindOpen:
		h = sdk
	case behindHeaders:
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Mcpguard-Subject") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			sdk.ServeHTTP(w, r)
		})
	}
	upTS.Config.Handler = h
	upTS.Start()
	t.Cleanup(upTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	p.token, err = as.IssueToken("alice", "t1", "cli", p.public, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAgainstRealProxy audits deployments behind the real mcpguard proxy
// with -upstream: a correct one passes every PROXY-* check (and the rest
// of the audit has no MUST failure), and each broken upstream fails
// exactly its checks.
func TestAgainstRealProxy(t *testing.T) {
	tests := []struct {
		name    string
		kind    behind
		want    []string // failing PROXY-* checks
		skipped []string
	}{
		{"upstream verifies the proxy's assertion", behindAssertion, nil, nil},
		{"open upstream", behindOpen, []string{audit.ProxyNoIdentity, audit.ProxyClientToken, audit.ProxyForged, audit.ProxyAudience}, nil},
		{"passthrough upstream", behindPassthrough, []string{audit.ProxyClientToken}, []string{audit.ProxyAudience}},
		{"upstream does not check the audience", behindAnyAudience, []string{audit.ProxyAudience}, nil},
		{"headers mode", behindHeaders, []string{audit.ProxyNoIdentity}, []string{audit.ProxyAudience}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Parallel: the proxy holds a token with an unknown kid for
			// up to its key-refresh rate limit (about 4 s), twice a run.
			t.Parallel()
			p := startProxied(t, tt.kind)
			signer, err := audit.ParseAssertionKey(keyPEM(t, p.key))
			if err != nil {
				t.Fatal(err)
			}
			rep, _ := runRaw(t, audit.Config{
				Endpoint: p.public, Token: p.token, CallTools: true,
				Proxy: audit.Proxy{Upstream: p.upstream, AssertionKey: signer},
			})
			var failed []string
			for _, id := range proxyChecks {
				r := result(rep, id)
				switch {
				case r.Verdict == audit.Fail:
					failed = append(failed, id)
				case r.Verdict == audit.Skip && !slices.Contains(tt.skipped, id):
					t.Errorf("%s skipped (%s)", id, r.Detail)
				}
			}
			if !slices.Equal(failed, tt.want) {
				t.Errorf("failing PROXY checks %v, want %v\n%s", failed, tt.want, dump(rep))
			}
			if testing.Verbose() {
				t.Logf("not passing:\n%s", dump(rep))
			}
			if tt.kind == behindAssertion {
				if bad := rep.Failed(audit.Must); len(bad) > 0 {
					t.Errorf("the audit of the proxy has MUST failures:\n%s", dump(rep))
				}
			}
		})
	}
}
