package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/internal/redistest"
	"github.com/mcpguard/mcpguard/proxy"
)

// echoUpstream answers every request with a JSON-RPC result naming the
// upstream and the identity headers it received.
func echoUpstream(t *testing.T, name string) (*httptest.Server, *headerLog) {
	t.Helper()
	log := &headerLog{}
	ts := httptest.NewServer(log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]string{
			"upstream": name, "sub": r.Header.Get(proxy.HeaderSubject), "auth": r.Header.Get("Authorization"),
		}})
		w.Write(b)
	})))
	t.Cleanup(ts.Close)
	return ts, log
}

// multiEnv is devas and a proxy with the given routes (their Issuers
// filled with devas).
func multiEnv(t *testing.T, pxTS *httptest.Server, cfg proxy.Config) (*devmint.Server, *proxy.Proxy) {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	var resources []string
	for i := range cfg.Routes {
		cfg.Routes[i].Issuers = []string{issuer}
		resources = append(resources, cfg.Routes[i].Resource)
	}
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: resources, Scopes: []string{baseScope, adminScope}})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return as, px
}

// TestRoutes: two upstreams in one proxy, each with its own resource,
// policy and identity mode; a token for one route is refused on the
// other; each route's metadata is at its own path-inserted URL and the
// root one is not served.
func TestRoutes(t *testing.T) {
	github, _ := echoUpstream(t, "github")
	files, filesLog := echoUpstream(t, "files")
	pxTS := httptest.NewUnstartedServer(nil)
	origin := "http://" + pxTS.Listener.Addr().String()
	as, _ := multiEnv(t, pxTS, proxy.Config{Routes: []proxy.Route{
		{Resource: origin + "/github/mcp", Upstream: github.URL + "/mcp", Scopes: []string{baseScope},
			Operations: proxy.Operations{Tools: map[string][]string{"delete_repo": {adminScope}}}},
		{Resource: origin + "/files/mcp", Upstream: files.URL + "/mcp", Identity: proxy.Identity{Mode: proxy.ModeHeaders},
			Validation: proxy.Validation{TenantClaim: "tenant"}},
	}})
	tok := func(resource string, scopes ...string) http.Header {
		s, err := as.IssueToken("alice", "acme", testClient, resource, scopes)
		if err != nil {
			t.Fatal(err)
		}
		return http.Header{"Authorization": {"Bearer " + s}}
	}
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	tests := []struct {
		name, url, body string
		hdr             http.Header
		status          int
		want            string
	}{
		{"github", origin + "/github/mcp", call("list"), tok(origin+"/github/mcp", baseScope), 200, `"upstream":"github"`},
		{"github tool scope", origin + "/github/mcp", call("delete_repo"), tok(origin+"/github/mcp", baseScope), 403, ""},
		{"files with headers", origin + "/files/mcp", call("read"), tok(origin + "/files/mcp"), 200, `"sub":"alice"`},
		{"github token on files", origin + "/files/mcp", call("read"), tok(origin+"/github/mcp", baseScope), 401, ""},
		{"files token on github", origin + "/github/mcp", call("list"), tok(origin+"/files/mcp", baseScope), 401, ""},
		{"github metadata", origin + "/.well-known/oauth-protected-resource/github/mcp", "", nil, 200, `"resource":"` + origin + `/github/mcp"`},
		{"files metadata", origin + "/.well-known/oauth-protected-resource/files/mcp", "", nil, 200, `"resource":"` + origin + `/files/mcp"`},
		{"no root metadata", origin + "/.well-known/oauth-protected-resource", "", nil, 404, ""},
		{"no such route", origin + "/mcp", call("x"), tok(origin+"/github/mcp", baseScope), 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "GET"
			if tt.body != "" {
				method = "POST"
			}
			resp := do(t, method, tt.url, tt.body, tt.hdr)
			body := readAll(t, resp)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, body, tt.status, tt.want)
			}
		})
	}
	for _, h := range filesLog.all() {
		if h.Get("Authorization") != "" || h.Get(proxy.HeaderSubject) != "alice" || h.Get(proxy.HeaderTenant) != "acme" ||
			h.Get(proxy.HeaderScopes) != "" || h.Get(proxy.HeaderClientID) != testClient {
			t.Errorf("headers mode upstream got %v", h)
		}
	}
}

// TestSessionBinding: through the proxy, bob cannot use alice's session:
// the middleware binds every session to the principal whose request
// created it, whatever the upstream does (this one binds nothing).
func TestSessionBinding(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Mcp-Session-Id") == "" {
			w.Header().Set("Mcp-Session-Id", "alice-session-1")
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`))
	}))
	t.Cleanup(up.Close)
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) { r.Upstream = up.URL + "/mcp" }, upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() }})
	alice := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}
	bob := http.Header{"Authorization": {"Bearer " + e.token(t, "bob", baseScope)}}
	init := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	resp := do(t, "POST", e.resource, init, alice)
	readAll(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid != "alice-session-1" {
		t.Fatalf("initialize = %d, session %q", resp.StatusCode, sid)
	}
	withSID := func(h http.Header) http.Header { h = h.Clone(); h.Set("Mcp-Session-Id", sid); return h }
	before := calls.Load()
	for _, m := range []string{"POST", "GET", "DELETE"} {
		body := ""
		if m == "POST" {
			body = callBody
		}
		resp := do(t, m, e.resource, body, withSID(bob))
		readAll(t, resp)
		if resp.StatusCode != 404 {
			t.Errorf("bob %s with alice's session: %d, want 404", m, resp.StatusCode)
		}
	}
	if calls.Load() != before {
		t.Errorf("bob's requests reached the upstream")
	}
	resp = do(t, "POST", e.resource, callBody, withSID(alice))
	readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Errorf("alice with her session: %d", resp.StatusCode)
	}
}

// TestRateLimit: per principal and per tool, in memory and on Redis
// shared by two proxies: the request past the limit gets 429 with
// Retry-After, another principal is not affected.
func TestRateLimit(t *testing.T) {
	rl := proxy.RateLimit{Principal: "5/1m", Tools: map[string]string{"whoami": "2/1m"}}
	run := func(t *testing.T, cfg func(c *proxy.Config)) {
		up, _ := echoUpstream(t, "u")
		e := newTestEnv(t, envOptions{
			route: func(r *proxy.Route) {
				r.Upstream = up.URL + "/mcp"
				r.RateLimit = rl
				r.Operations.Tools["whoami"] = nil
			},
			cfg:      cfg,
			upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() },
		})
		alice := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}
		other := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
		want := []int{200, 200, 429} // whoami: 2 a minute
		for i, st := range want {
			resp := do(t, "POST", e.resource, callBody, alice)
			body := readAll(t, resp)
			if resp.StatusCode != st {
				t.Fatalf("whoami %d: %d %s, want %d", i, resp.StatusCode, body, st)
			}
			if st == 429 && (resp.Header.Get("Retry-After") == "" || body != `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Too Many Requests"}}`+"\n") {
				t.Errorf("429 = %q, Retry-After %q", body, resp.Header.Get("Retry-After"))
			}
		}
		// 3 requests counted so far for alice; 2 more pass, the 6th is refused.
		for i, st := range []int{200, 200, 429} {
			resp := do(t, "POST", e.resource, other, alice)
			readAll(t, resp)
			if resp.StatusCode != st {
				t.Errorf("tools/list %d: %d, want %d", i, resp.StatusCode, st)
			}
		}
		resp := do(t, "POST", e.resource, callBody, http.Header{"Authorization": {"Bearer " + e.token(t, "bob", baseScope)}})
		readAll(t, resp)
		if resp.StatusCode != 200 {
			t.Errorf("bob: %d, want 200", resp.StatusCode)
		}
	}
	t.Run("memory", func(t *testing.T) { run(t, nil) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		run(t, func(c *proxy.Config) { c.Redis = proxy.Redis{Addr: srv.Addr, Prefix: "test:" + t.Name() + ":"} })
	})
}

// TestReplicasShareSessions: two proxies on one Redis act as one: a
// session created through the first is served through the second for its
// principal, and refused there for another.
func TestReplicasShareSessions(t *testing.T) {
	srv := redistest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Mcp-Session-Id") == "" {
			w.Header().Set("Mcp-Session-Id", "shared-session")
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`))
	}))
	t.Cleanup(up.Close)
	// One public origin, two replicas behind it: both serve the same
	// resource; the test sends to each directly.
	lb := httptest.NewUnstartedServer(nil)
	resource := "http://" + lb.Listener.Addr().String() + "/mcp"
	var mu sync.Mutex
	var replicas []*httptest.Server
	asTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope}})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	for range 2 {
		px, err := proxy.New(proxy.Config{
			Routes: []proxy.Route{{Resource: resource, Upstream: up.URL + "/mcp", Issuers: []string{issuer}}},
			Redis:  proxy.Redis{Addr: srv.Addr, Prefix: "replicas:"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := px.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		ts := httptest.NewServer(px)
		t.Cleanup(ts.Close)
		mu.Lock()
		replicas = append(replicas, ts)
		mu.Unlock()
	}
	lb.Close()
	token := func(sub string) http.Header {
		s, err := as.IssueToken(sub, "acme", testClient, resource, nil)
		if err != nil {
			t.Fatal(err)
		}
		return http.Header{"Authorization": {"Bearer " + s}}
	}
	init := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	resp := do(t, "POST", replicas[0].URL+"/mcp", init, token("alice"))
	readAll(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize on replica 0: %d %q", resp.StatusCode, sid)
	}
	for _, c := range []struct {
		sub    string
		status int
	}{{"alice", 200}, {"bob", 404}} {
		h := token(c.sub)
		h.Set("Mcp-Session-Id", sid)
		resp := do(t, "POST", replicas[1].URL+"/mcp", callBody, h)
		readAll(t, resp)
		if resp.StatusCode != c.status {
			t.Errorf("%s on replica 1 with the session from replica 0: %d, want %d", c.sub, resp.StatusCode, c.status)
		}
	}
}
