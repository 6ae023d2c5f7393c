package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestExchange: the exchange mode sends the client's token to the token
// endpoint as an RFC 8693 subject_token (client authenticated with HTTP
// Basic), puts the issued token upstream, caches it per principal, makes
// one exchange for concurrent requests (single flight), and answers 502
// when the exchange is refused.
func TestExchange(t *testing.T) {
	var exchanges atomic.Int32
	var refuse atomic.Bool
	var mu sync.Mutex
	var forms []map[string]string
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		r.ParseForm()
		mu.Lock()
		forms = append(forms, map[string]string{"id": id, "secret": secret, "grant_type": r.Form.Get("grant_type"),
			"subject_token_type": r.Form.Get("subject_token_type"), "subject_token": r.Form.Get("subject_token"),
			"audience": r.Form.Get("audience"), "resource": r.Form.Get("resource")})
		mu.Unlock()
		exchanges.Add(1)
		time.Sleep(100 * time.Millisecond) // let concurrent requests meet
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		io.WriteString(w, `{"access_token":"exchanged-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":300}`)
	}))
	t.Cleanup(as.Close)
	up, seen := echoUpstream(t, "u")
	e := newTestEnv(t, envOptions{
		route: func(r *proxy.Route) {
			r.Upstream = up.URL + "/mcp"
			r.Identity = proxy.Identity{Mode: proxy.ModeExchange, Audience: "https://files.internal", Exchange: proxy.Exchange{
				TokenEndpoint: as.URL + "/token", ClientID: "mcpguard-proxy", ClientSecret: "s3cret"}}
		},
		upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() },
	})
	tok := e.token(t, "alice", baseScope)
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := do(t, "POST", e.resource, callBody, auth)
			readAll(t, resp)
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	resp := do(t, "POST", e.resource, callBody, auth)
	readAll(t, resp)
	if n := exchanges.Load(); n != 1 {
		t.Errorf("exchanges = %d, want 1 (single flight, then the cache)", n)
	}
	want := map[string]string{"id": "mcpguard-proxy", "secret": "s3cret", "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token", "subject_token": tok,
		"audience": "https://files.internal", "resource": up.URL + "/mcp"}
	mu.Lock()
	for k, v := range want {
		if forms[0][k] != v {
			t.Errorf("exchange %s = %q, want %q", k, forms[0][k], v)
		}
	}
	mu.Unlock()
	for _, h := range seen.all() {
		if h.Get("Authorization") != "Bearer exchanged-token" {
			t.Errorf("upstream Authorization = %q", h.Get("Authorization"))
		}
	}
	refuse.Store(true)
	resp = do(t, "POST", e.resource, callBody, http.Header{"Authorization": {"Bearer " + e.token(t, "bob", baseScope)}})
	if body := readAll(t, resp); resp.StatusCode != 502 || body != `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Bad Gateway"}}`+"\n" {
		t.Errorf("refused exchange: %d %s", resp.StatusCode, body)
	}
}
