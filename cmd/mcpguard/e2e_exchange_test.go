package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
)

// TestExchangeDiscoveredTokenEndpoint (issue 23 item 3, the exchange
// mode): "mcpguard proxy" with identity mode exchange and no
// token_endpoint finds it in the RFC 8414 metadata of the development
// authorization server that issued the client's token, and sends the RFC
// 8693 exchange there (client authenticated with HTTP Basic, the client's
// token as subject_token); the upstream gets the exchanged token, never
// the client's, and a second call reuses it (no second discovery or
// exchange). A second proxy whose first exchange finds the metadata down
// answers 503. The token endpoint of devas is wrapped to answer the
// exchange grant, which devas does not implement.
func TestExchangeDiscoveredTokenEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a proxy")
	}
	addr, addr2 := freeAddr(t), freeAddr(t)
	resource, resource2 := "http://"+addr+"/mcp", "http://"+addr2+"/mcp"

	asTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource, resource2}, Scopes: []string{"mcp:tools"}, AutoApprove: true,
		Clients: []cimd.Client{{Document: cimd.Document{ClientID: e2eClientID, RedirectURIs: []string{e2eRedirect}, TokenEndpointAuthMethod: "none"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var metadataGets int
	var metadataDown atomic.Bool
	var forms []map[string]string
	asTS.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			mu.Lock()
			metadataGets++
			mu.Unlock()
			if metadataDown.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
		}
		if r.Method == http.MethodPost && r.URL.Path == "/token" {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err := r.ParseForm(); err == nil && r.PostForm.Get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange" {
				id, secret, _ := r.BasicAuth()
				mu.Lock()
				forms = append(forms, map[string]string{"id": id, "secret": secret, "subject_token": r.PostForm.Get("subject_token"),
					"subject_token_type": r.PostForm.Get("subject_token_type"), "audience": r.PostForm.Get("audience")})
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"access_token":"exchanged-for-upstream","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		as.ServeHTTP(w, r)
	})
	asTS.Start()
	t.Cleanup(asTS.Close)

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

	cfg := func(resource string) string {
		return fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s/mcp
    issuers: [%s]
    scopes: [mcp:tools]
    identity:
      mode: exchange
      audience: https://files.internal
      exchange:
        client_id: mcpguard-proxy
        client_secret_env: EXCHANGE_SECRET
`, resource, upTS.URL, issuer)
	}
	env := map[string]string{"EXCHANGE_SECRET": "s3cret"}
	startProxyCmd(t, addr, cfg(resource), env)
	mu.Lock()
	afterStart := metadataGets // the key discovery's
	mu.Unlock()

	tok, err := as.IssueToken("alice", "tenant-a", e2eClientID, resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	call := func(resource, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	for i := range 2 {
		if status, body := call(resource, tok); status != http.StatusOK {
			t.Fatalf("call %d: %d %s", i+1, status, body)
		}
	}

	mu.Lock()
	afterFirst := metadataGets
	mu.Unlock()

	// A second proxy, started while the metadata is up (its keys), whose
	// first exchange finds the metadata down: 503, the upstream not
	// called, no exchange sent.
	startProxyCmd(t, addr2, cfg(resource2), env)
	metadataDown.Store(true)
	tok2, err := as.IssueToken("bob", "tenant-b", e2eClientID, resource2, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := call(resource2, tok2); status != http.StatusServiceUnavailable ||
		body != `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Service Unavailable"}}`+"\n" {
		t.Errorf("exchange with the metadata down: %d %q, want 503 Service Unavailable", status, body)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(forms) != 1 {
		t.Fatalf("exchanges = %d, want 1 (then the cache)", len(forms))
	}
	want := map[string]string{"id": "mcpguard-proxy", "secret": "s3cret", "subject_token": tok,
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "audience": "https://files.internal"}
	for k, v := range want {
		if forms[0][k] != v {
			t.Errorf("exchange %s = %q, want %q", k, forms[0][k], v)
		}
	}
	// One metadata document fetched for the first proxy's exchange: the
	// RFC 8414 one, which devas serves first.
	if afterFirst-afterStart != 1 {
		t.Errorf("metadata fetches for the exchange = %d, want 1", afterFirst-afterStart)
	}
	if len(seen) != 2 {
		t.Errorf("the upstream got %d requests, want 2", len(seen))
	}
	for _, h := range seen {
		if a := h.Get("Authorization"); a != "Bearer exchanged-for-upstream" {
			t.Errorf("the upstream got Authorization %q, want the exchanged token", a)
		}
	}
}
