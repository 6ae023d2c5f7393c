package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/redisstore"
	"github.com/mcpguard/mcpguard/validate"
)

var _ middleware.OwnerStore = (*redisstore.OwnerStore)(nil)

func TestOwnerStore(t *testing.T) {
	_, rdb := newRedis(t)
	s, err := redisstore.NewOwnerStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	claim := func(kind, id, owner, want string) {
		t.Helper()
		got, err := s.Claim(ctx, kind, id, owner, time.Minute)
		if err != nil || got != want {
			t.Fatalf("Claim(%s, %s, %s) = %q, %v; want %q", kind, id, owner, got, err, want)
		}
	}
	claim("session", "sid-1", "alice", "alice")
	claim("session", "sid-1", "bob", "alice") // unchanged
	claim("task", "sid-1", "bob", "bob")      // kinds do not collide
	if o, err := s.Owner(ctx, "session", "sid-1", 2*time.Minute); o != "alice" || err != nil {
		t.Fatalf("Owner = %q, %v", o, err)
	}
	keys := keysWithTTL(t, rdb)
	if len(keys) != 2 {
		t.Fatalf("keys %q", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "mcpguard:owner:") || strings.Contains(k, "sid-1") || len(k) != len("mcpguard:owner:")+43 {
			t.Errorf("key %q: want the prefix and a hash", k)
		}
	}
	// Owner renewed the record for its ttl.
	if ttl := rdb.PTTL(ctx, keys[0]).Val() + rdb.PTTL(ctx, keys[1]).Val(); ttl < 2*time.Minute+50*time.Second {
		t.Errorf("TTLs %v: Owner did not renew", ttl)
	}
	if err := s.Forget(ctx, "session", "sid-1"); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Owner(ctx, "session", "sid-1", time.Minute); o != "" || err != nil {
		t.Fatalf("after Forget: %q, %v", o, err)
	}
	if _, err := s.Claim(ctx, "session", "x", "a", time.Microsecond); err == nil {
		t.Error("a TTL under 1ms was accepted")
	}
}

// goSDKServer is the go-sdk's default (stateful) Streamable HTTP handler
// with a whoami tool, kept across restarts of the middleware in front of
// it (as behind a proxy, or a replica that restarted).
func goSDKServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "redis-restart", Version: "0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]any, error) {
		p, _ := middleware.PrincipalFromContext(ctx)
		return nil, map[string]any{"subject": p.Subject}, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

type sessionGuard struct {
	iss *authtest.Issuer
	h   http.Handler
}

func newSessionGuard(t *testing.T, iss *authtest.Issuer, store middleware.OwnerStore, next http.Handler, log *slog.Logger) *sessionGuard {
	t.Helper()
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:   []string{resource},
		TenantClaim: "tenant",
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := middleware.New(middleware.Config{
		Validator: v,
		Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:    []string{"mcp"},
		Sessions:  middleware.SessionConfig{Store: store},
		Logger:    log,
		Now:       iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &sessionGuard{iss: iss, h: m.Handler(next)}
}

func (g *sessionGuard) post(t *testing.T, token, sid, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	r.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	w := httptest.NewRecorder()
	g.h.ServeHTTP(w, r)
	return w
}

const (
	initBody   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	inittedMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	whoamiCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
)

func (g *sessionGuard) initialize(t *testing.T, token string) string {
	t.Helper()
	w := g.post(t, token, "", initBody)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := g.post(t, token, sid, inittedMsg); w.Code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	return sid
}

// TestSessionsSurviveRestart: with the Redis owner store, a middleware
// that restarts (or another replica) in front of the same go-sdk server
// keeps every session bound to its creator; with the default in-process
// store, it refuses every session it did not see created (404).
func TestSessionsSurviveRestart(t *testing.T) {
	_, rdb := newRedis(t)
	store, err := redisstore.NewOwnerStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	alice := iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp"}})
	bob := iss.Token(t, authtest.Token{Subject: "bob", Tenant: "tenant-b", Scopes: []string{"mcp"}})
	srv := goSDKServer()
	sid := newSessionGuard(t, iss, store, srv, nil).initialize(t, alice)

	restarted := newSessionGuard(t, iss, store, srv, nil)
	if w := restarted.post(t, bob, sid, whoamiCall); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "alice") {
		t.Fatalf("bob after the restart: %d %s", w.Code, w.Body)
	}
	if w := restarted.post(t, alice, sid, whoamiCall); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"subject":"alice"`) {
		t.Fatalf("alice after the restart: %d %s", w.Code, w.Body)
	}
	keysWithTTL(t, rdb)

	memory := newSessionGuard(t, iss, nil, srv, nil)
	for _, tok := range []string{alice, bob} {
		if w := memory.post(t, tok, sid, whoamiCall); w.Code != http.StatusNotFound {
			t.Fatalf("in-process store after a restart: %d %s, want 404", w.Code, w.Body)
		}
	}
}

// TestOwnerStoreOutage: while Redis is down, every request carrying a
// session ID, and every answer creating one, is refused with 503 (fail
// closed), and the outage is logged once.
func TestOwnerStoreOutage(t *testing.T) {
	srv, rdb := newRedis(t)
	store, err := redisstore.NewOwnerStore(redisstore.Config{Client: rdb, Timeout: testTimeout}) // initialize must succeed before the outage, at any load
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	alice := iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp"}})
	var logs bytes.Buffer
	g := newSessionGuard(t, iss, store, goSDKServer(), slog.New(slog.NewTextHandler(&logs, nil)))
	sid := g.initialize(t, alice)
	srv.Stop()
	for range 3 {
		if w := g.post(t, alice, sid, whoamiCall); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("session request with Redis down: %d %s", w.Code, w.Body)
		}
		if w := g.post(t, alice, "", initBody); w.Code != http.StatusServiceUnavailable || w.Header().Get("Mcp-Session-Id") != "" {
			t.Fatalf("new session with Redis down: %d %v", w.Code, w.Header())
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "session store unavailable") {
		t.Fatalf("%d outage records, want 1:\n%s", n, logs.String())
	}
}
