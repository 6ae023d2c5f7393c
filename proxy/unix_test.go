package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// unixSocketDir is a short temporary directory for sockets (a socket
// path is limited to about 100 bytes, and t.TempDir's can be longer).
func unixSocketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestUnixSocketUpstream: a go-sdk server listening on a unix socket in
// a temporary directory, behind the proxy as
// unix:///…/server.sock?path=/mcp, in the headers identity mode (allowed
// for unix-socket upstreams): a go-sdk client through the proxy calls a
// tool that reports the X-Mcpguard-* identity it received and the Host
// and path of its request; a client's forged identity header never
// arrives; /readyz follows the socket.
func TestUnixSocketUpstream(t *testing.T) {
	dir := unixSocketDir(t)
	sock := filepath.Join(dir, "server.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "unix", Version: "1"}, nil)
	type seen struct{ Subject, Tenant, Scopes, Host, Path, Auth, Forged string }
	var mu sync.Mutex
	var last seen
	mcp.AddTool(s, &mcp.Tool{Name: "who"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		b, _ := json.Marshal(last)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = seen{r.Header.Get(proxy.HeaderSubject), r.Header.Get(proxy.HeaderTenant), r.Header.Get(proxy.HeaderScopes),
			r.Host, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Mcpguard-Forged")}
		mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })

	asTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	resource := "http://" + pxTS.Listener.Addr().String() + "/mcp"
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	px, err := proxy.New(proxy.Config{Routes: []proxy.Route{{
		Resource: resource, Upstream: "unix://" + sock + "?path=/rpc/mcp", Issuers: []string{issuer}, Scopes: []string{baseScope},
		Identity: proxy.Identity{Mode: proxy.ModeHeaders}, Validation: proxy.Validation{TenantClaim: "tenant"},
	}}})
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	ctx := testContext(t)
	if err := px.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	tok, err := as.IssueToken("alice", "acme", testClient, resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{
		Transport: bearerRT{tok, http.Header{"X-Mcpguard-Forged": {"mallory"}, proxy.HeaderSubject: {"mallory"}}}}}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "who"})
	if err != nil || res.IsError {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	var got seen
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &got); err != nil {
		t.Fatal(err)
	}
	if want := (seen{Subject: "alice", Tenant: "acme", Scopes: baseScope, Host: "localhost", Path: "/rpc/mcp"}); got != want {
		t.Errorf("the unix-socket upstream saw %+v, want %+v", got, want)
	}

	ready := func() (int, string) {
		resp, err := http.Get(pxTS.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := ready(); st != http.StatusOK || !strings.Contains(body, `"upstream_reachable":true`) {
		t.Errorf("/readyz = %d %s, want 200 with the socket reachable", st, body)
	}
	up.Close()
	os.Remove(sock)
	if st, body := ready(); st != http.StatusServiceUnavailable || !strings.Contains(body, `"upstream_reachable":false`) {
		t.Errorf("/readyz after the socket closed = %d %s, want 503", st, body)
	}
	// A call now gets the proxy's 502, no socket detail.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "who"}); err == nil || strings.Contains(err.Error(), sock) {
		t.Errorf("CallTool with the socket gone: %v, want a 502 without the socket's path", err)
	}
}

// TestUnixUpstreamConfig: the unix upstream form, and the headers mode
// allowed for loopback and unix-socket upstreams only.
func TestUnixUpstreamConfig(t *testing.T) {
	iss := "https://auth.example.com"
	tests := []struct {
		upstream, mode string
		ok             bool
	}{
		{"unix:///run/mcp/server.sock", proxy.ModeHeaders, true},
		{"unix:///run/mcp/server.sock?path=/v1/mcp", proxy.ModeAssertion, true},
		{"http://127.0.0.1:3000/mcp", proxy.ModeHeaders, true},
		{"http://localhost:3000/mcp", proxy.ModeHeaders, true},
		{"http://[::1]:3000/mcp", proxy.ModeHeaders, true},
		{"http://10.0.0.5:3000/mcp", proxy.ModeHeaders, false},
		{"https://mcp.internal/mcp", proxy.ModeHeaders, false},
		{"unix://host/run/server.sock", proxy.ModeHeaders, false}, // a host: not a socket path
		{"unix:run/server.sock", proxy.ModeHeaders, false},        // relative
		{"unix:///run/../server.sock", proxy.ModeHeaders, false},  // not clean
		{"unix:///run/server.sock?path=mcp", proxy.ModeHeaders, false},
		{"unix:///run/server.sock?other=1", proxy.ModeHeaders, false},
		{"unix:///run/server.sock#frag", proxy.ModeHeaders, false},
	}
	for _, tc := range tests {
		px, err := proxy.New(proxy.Config{Routes: []proxy.Route{{
			Resource: "https://mcp.example.com/mcp", Upstream: tc.upstream, Issuers: []string{iss},
			Identity: proxy.Identity{Mode: tc.mode, Audience: "http://localhost/mcp"},
		}}})
		if px != nil {
			px.Close()
		}
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, proxy.ErrConfig)) {
			t.Errorf("%s, %s: err = %v, want ok %v", tc.upstream, tc.mode, err, tc.ok)
		}
	}
}
