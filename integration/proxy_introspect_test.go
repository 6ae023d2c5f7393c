package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestIntrospectionThroughProxy (issue 23 item 4, introspection): mcpguard
// proxy, configured from YAML for RFC 7662 introspection at panva's
// oidc-provider issuing opaque tokens, in front of an upstream recording
// what it receives. A valid opaque token passes (one introspection call,
// then the cached result); once the token is revoked at the provider (RFC
// 7009), it is refused with the exact 401 as soon as the cached result's
// max_cache_ttl has passed, after one more introspection call; a string
// the provider never issued is refused. The upstream gets the proxy's
// assertion, never the client's token.
func TestIntrospectionThroughProxy(t *testing.T) {
	node := requireNode(t)
	t.Parallel()
	as := startOIDCHost(t, node, "--format", "opaque")

	// The introspection endpoint behind a counting reverse proxy.
	var introspections atomic.Int64
	target, _ := url.Parse(as.issuer)
	rp := httputil.NewSingleHostReverseProxy(target)
	ixTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		introspections.Add(1)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(ixTS.Close)

	var mu sync.Mutex
	var seen []http.Header
	upTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	}))
	t.Cleanup(upTS.Close)

	pxTS := httptest.NewUnstartedServer(nil)
	origin := "http://" + pxTS.Listener.Addr().String()
	resource := origin + "/mcp"
	metaURL := origin + "/.well-known/oauth-protected-resource/mcp"
	as.send(t, map[string]string{"cmd": "resource", "url": resource})
	const maxCacheTTL = 2 * time.Second
	yaml := fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s/mcp
    issuers: [%s]
    scopes: [%s]
issuers:
  %s:
    opaque_only: true
    introspection:
      endpoint: %s/token/introspection
      client_id: mcpguard-introspect
      client_secret_env: INTROSPECTION_SECRET
      max_cache_ttl: %s
      allow_missing_subject: true # client-credentials tokens have no sub
`, resource, upTS.URL, as.issuer, baseScope, as.issuer, ixTS.URL, maxCacheTTL)
	cfg, err := proxy.Parse("mcpguard.yaml", []byte(yaml), func(k string) string {
		return map[string]string{"INTROSPECTION_SECRET": "introspect-secret"}[k]
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	// The proxy's clock runs with the wall clock, plus a step the test
	// takes to end the cached result instead of sleeping through it.
	var skip atomic.Int64
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skip.Load())) }
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatalf("proxy not ready: %v", err)
	}

	p := &oidcPair{as: as}
	tok := p.clientCredentials(t, "mcpguard-cc", resource)
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("token %q is a JWT, want an opaque one", tok)
	}
	call := func(tok string) *rawResponse {
		t.Helper()
		return rawPost(testContext(t), t, resource, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: toolCall("whoami", nil)})
	}

	if r := call(tok); r.status != http.StatusOK {
		t.Fatalf("valid opaque token: %d %q %s", r.status, r.wwwAuth, r.body)
	}
	cachedUntil := time.Now().Add(maxCacheTTL) // the cached result ends before this
	if n := introspections.Load(); n != 1 {
		t.Errorf("introspection calls after the first request = %d, want 1", n)
	}
	if r := call(tok); r.status != http.StatusOK {
		t.Errorf("valid opaque token, again: %d %q", r.status, r.wwwAuth)
	}
	if n := introspections.Load(); n != 1 && time.Now().Before(cachedUntil) {
		t.Errorf("introspection calls after the second request = %d, want 1 (cached)", n)
	}

	// Revoke it (RFC 7009, authenticated as the client it was issued to).
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, _ := http.NewRequest(http.MethodPost, as.issuer+"/token/revocation", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("mcpguard-cc", "cc-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %d", resp.StatusCode)
	}
	// The revoked token may be served from the cache until cachedUntil,
	// never after it: the proxy's clock steps past it.
	skip.Store(int64(time.Until(cachedUntil) + 100*time.Millisecond))
	before := introspections.Load()
	if r := call(tok); r.status != http.StatusUnauthorized || len(r.wwwAuth) != 1 || r.wwwAuth[0] != invalidToken(metaURL) {
		t.Errorf("revoked token after max_cache_ttl: %d %q, want 401 %q", r.status, r.wwwAuth, invalidToken(metaURL))
	}
	if n := introspections.Load() - before; n != 1 {
		t.Errorf("introspection calls for the revoked token = %d, want 1", n)
	}
	if r := call("never-issued-by-the-provider"); r.status != http.StatusUnauthorized || len(r.wwwAuth) != 1 || r.wwwAuth[0] != invalidToken(metaURL) {
		t.Errorf("unknown opaque token: %d %q, want 401 %q", r.status, r.wwwAuth, invalidToken(metaURL))
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Errorf("the upstream got %d requests, want 2 (the two accepted calls)", len(seen))
	}
	for _, h := range seen {
		for name, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, tok) {
					t.Errorf("the upstream got the client's token in %s", name)
				}
			}
		}
		if a := h.Get("Authorization"); !strings.HasPrefix(a, "Bearer ") || strings.Count(a, ".") != 2 {
			t.Errorf("the upstream got Authorization %q, want the proxy's assertion", a)
		}
	}
}
