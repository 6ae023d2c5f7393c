package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// fakeSessions is a stateful MCP server in miniature: a POST without
// Mcp-Session-Id creates a session (answering its ID), a request for a
// live session is served (200, the session's creator's subject as the
// body), DELETE ends it (204), an unknown ID is 404.
type fakeSessions struct {
	mu      sync.Mutex
	n       int
	live    map[string]bool
	served  int      // requests that reached a live session
	deleted []string // sessions ended by a DELETE
}

func newFakeSessions() *fakeSessions { return &fakeSessions{live: map[string]bool{}} }

func (s *fakeSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.n++
		sid = fmt.Sprintf("s-%d", s.n)
		s.live[sid] = true
		w.Header().Set("Mcp-Session-Id", sid)
		w.WriteHeader(http.StatusOK)
		return
	}
	if !s.live[sid] {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		delete(s.live, sid)
		s.deleted = append(s.deleted, sid)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.served++
	w.WriteHeader(http.StatusOK)
}

func (s *fakeSessions) isLive(sid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[sid]
}

func (s *fakeSessions) liveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

func (s *fakeSessions) servedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// waitClosed waits (bounded) until the server has ended sid.
func (s *fakeSessions) waitClosed(t *testing.T, sid string) {
	t.Helper()
	for i := 0; i < 3000 && s.isLive(sid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if s.isLive(sid) {
		t.Fatalf("session %s is still open in the server", sid)
	}
}

type sessionEnv struct {
	f   *fixture
	srv *fakeSessions
	h   http.Handler
}

func newSessionEnv(t *testing.T, mutate func(*Config)) *sessionEnv {
	t.Helper()
	f := newFixture(t, func(c *Config) {
		c.Operations.Public.Methods = []string{"initialize", "ping"}
		if mutate != nil {
			mutate(c)
		}
	})
	srv := newFakeSessions()
	return &sessionEnv{f: f, srv: srv, h: f.m.Handler(srv)}
}

func (e *sessionEnv) tokenOf(t *testing.T, sub, tenant string) string {
	t.Helper()
	return e.f.iss.Token(t, authtest.Token{Subject: sub, Tenant: tenant, Scopes: []string{"mcp", "tools:read"}})
}

// do sends method with token ("" for none) and session ID sid ("" for
// none); a POST carries body (an initialize request when empty).
func (e *sessionEnv) do(t *testing.T, method, token, sid, body string) *httptest.ResponseRecorder {
	t.Helper()
	if body == "" {
		body = rpcBody(legacyRev, "initialize", "")
	}
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, resource, rd)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", legacyRev)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func (e *sessionEnv) create(t *testing.T, token string) string {
	t.Helper()
	w := e.do(t, http.MethodPost, token, "", "")
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q, session %q", w.Code, w.Body, sid)
	}
	return sid
}

func TestSessionBoundToCreator(t *testing.T) {
	e := newSessionEnv(t, nil)
	alice, bob := e.tokenOf(t, "alice", "tenant-a"), e.tokenOf(t, "bob", "tenant-b")
	sid := e.create(t, alice)
	list := rpcBody(legacyRev, "tools/list", "")
	for _, tc := range []struct {
		name, method, token, sid, body string
		want                           int
	}{
		{"bob POST", http.MethodPost, bob, sid, list, 404},
		{"bob GET", http.MethodGet, bob, sid, "", 404},
		{"bob DELETE", http.MethodDelete, bob, sid, "", 404},
		{"tokenless public POST", http.MethodPost, "", sid, rpcBody(legacyRev, "ping", ""), 404},
		{"tokenless GET", http.MethodGet, "", sid, "", 401},
		{"alice POST", http.MethodPost, alice, sid, list, 200},
		{"alice GET", http.MethodGet, alice, sid, "", 200},
		{"unknown ID", http.MethodPost, alice, "s-999", list, 404},
		{"repeated header", http.MethodPost, alice, sid + "\x00" + sid, list, 400},
		{"control byte", http.MethodPost, alice, "s\x01", list, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.srv.servedCount()
			var w *httptest.ResponseRecorder
			if strings.Contains(tc.sid, "\x00") {
				r := httptest.NewRequest(tc.method, resource, strings.NewReader(tc.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("MCP-Protocol-Version", legacyRev)
				r.Header.Set("Authorization", "Bearer "+tc.token)
				r.Header["Mcp-Session-Id"] = strings.Split(tc.sid, "\x00")
				w = httptest.NewRecorder()
				e.h.ServeHTTP(w, r)
			} else {
				w = e.do(t, tc.method, tc.token, tc.sid, tc.body)
			}
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want == 404 {
				if got := w.Body.String(); got != bodySessionNotFound {
					t.Errorf("body %s", got)
				}
				if got := w.Header().Get("WWW-Authenticate"); got != "" {
					t.Errorf("WWW-Authenticate %q on a 404", got)
				}
			}
			if served := e.srv.servedCount() - before; (tc.want == 200) != (served == 1) {
				t.Errorf("the server served %d requests", served)
			}
		})
	}
	if !e.srv.isLive(sid) {
		t.Fatal("bob's DELETE ended alice's session")
	}
	if w := e.do(t, http.MethodDelete, alice, sid, ""); w.Code != http.StatusNoContent {
		t.Fatalf("alice DELETE: %d", w.Code)
	}
	if w := e.do(t, http.MethodPost, alice, sid, list); w.Code != http.StatusNotFound {
		t.Fatalf("after DELETE: %d, want 404", w.Code)
	}
}

func TestSessionSamePrincipalNewToken(t *testing.T) {
	e := newSessionEnv(t, nil)
	sid := e.create(t, e.tokenOf(t, "alice", "tenant-a"))
	more := e.f.iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp", "tools:read", "tools:call"}})
	if w := e.do(t, http.MethodGet, more, sid, ""); w.Code != http.StatusOK {
		t.Fatalf("refreshed token of the same principal: %d", w.Code)
	}
	other := e.f.iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-b", Scopes: []string{"mcp"}})
	if w := e.do(t, http.MethodGet, other, sid, ""); w.Code != http.StatusNotFound {
		t.Fatalf("same subject, other tenant: %d", w.Code)
	}
}

func TestSessionServer404Forgets(t *testing.T) {
	e := newSessionEnv(t, nil)
	alice := e.tokenOf(t, "alice", "tenant-a")
	sid := e.create(t, alice)
	e.srv.mu.Lock()
	delete(e.srv.live, sid) // the server ended it on its own
	e.srv.mu.Unlock()
	if w := e.do(t, http.MethodGet, alice, sid, ""); w.Code != http.StatusNotFound {
		t.Fatalf("server's 404: %d", w.Code)
	}
	if n := e.f.m.sessions.t.byID[sid]; n != nil {
		t.Fatal("the server's 404 did not forget the session")
	}
}

func TestSessionPassUnknown(t *testing.T) {
	e := newSessionEnv(t, func(c *Config) { c.Sessions.PassUnknown = true })
	alice, bob := e.tokenOf(t, "alice", "tenant-a"), e.tokenOf(t, "bob", "tenant-b")
	if w := e.do(t, http.MethodGet, alice, "s-404", ""); w.Code != http.StatusNotFound || w.Body.Len() != 0 {
		t.Fatalf("unknown ID with PassUnknown: %d %q, want the server's own 404", w.Code, w.Body)
	}
	sid := e.create(t, alice)
	if w := e.do(t, http.MethodGet, bob, sid, ""); w.Code != http.StatusNotFound || w.Body.String() != bodySessionNotFound {
		t.Fatalf("another principal's session with PassUnknown: %d %q", w.Code, w.Body)
	}
}

// TestSessionFlood: 10× the bound of sessions from one principal, and as
// many anonymous ones, leave a victim's session working; the flooder's
// evicted sessions are closed in the server.
func TestSessionFlood(t *testing.T) {
	const bound = 20
	e := newSessionEnv(t, func(c *Config) {
		c.Sessions = SessionConfig{Max: bound, PerPrincipal: 4, Anonymous: 4}
	})
	victim := e.tokenOf(t, "victim", "tenant-v")
	sid := e.create(t, victim)
	flooder := e.tokenOf(t, "mallory", "tenant-m")
	for i := 0; i < 10*bound; i++ {
		e.create(t, flooder)
		if w := e.do(t, http.MethodPost, "", "", ""); w.Code != http.StatusOK { // anonymous initialize
			t.Fatalf("anonymous initialize %d: %d", i, w.Code)
		}
	}
	if w := e.do(t, http.MethodGet, victim, sid, ""); w.Code != http.StatusOK {
		t.Fatalf("victim after the flood: %d %s", w.Code, w.Body)
	}
	if n := len(e.f.m.sessions.t.byID); n > bound {
		t.Fatalf("%d sessions bound, bound %d", n, bound)
	}
	// Closing runs in the background: bounded wait for the server to
	// hold the victim's plus 4 + 4.
	for i := 0; i < 3000 && e.srv.liveCount() > 9; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.srv.liveCount(); n != 9 {
		t.Fatalf("%d sessions open in the server, want 9 (evicted ones closed)", n)
	}
}

func TestSessionTableFull(t *testing.T) {
	e := newSessionEnv(t, func(c *Config) { c.Sessions = SessionConfig{Max: 2, PerPrincipal: 2} })
	a, b, c := e.tokenOf(t, "a", "t"), e.tokenOf(t, "b", "t"), e.tokenOf(t, "c", "t")
	sa, sb := e.create(t, a), e.create(t, b)
	w := e.do(t, http.MethodPost, c, "", "")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Mcp-Session-Id") != "" || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("full table: %d %v", w.Code, w.Header())
	}
	if w.Body.String() != bodyUnavailable {
		t.Fatalf("body %q", w.Body)
	}
	e.srv.waitClosed(t, "s-3")
	for _, s := range []struct{ tok, sid string }{{a, sa}, {b, sb}} {
		if w := e.do(t, http.MethodGet, s.tok, s.sid, ""); w.Code != http.StatusOK {
			t.Fatalf("live session after a refused one: %d", w.Code)
		}
	}
}

func TestSessionIdleExpiry(t *testing.T) {
	e := newSessionEnv(t, func(c *Config) { c.Sessions.IdleTimeout = time.Minute })
	alice := e.tokenOf(t, "alice", "tenant-a")
	kept, idle := e.create(t, alice), e.create(t, alice)
	e.f.iss.Advance(40 * time.Second)
	if w := e.do(t, http.MethodGet, alice, kept, ""); w.Code != http.StatusOK {
		t.Fatalf("within the idle timeout: %d", w.Code)
	}
	e.f.iss.Advance(40 * time.Second) // idle: 80s, kept: 40s
	alice = e.tokenOf(t, "alice", "tenant-a")
	if w := e.do(t, http.MethodGet, alice, kept, ""); w.Code != http.StatusOK {
		t.Fatalf("renewed session: %d", w.Code)
	}
	e.srv.waitClosed(t, idle) // swept by the request above
	if w := e.do(t, http.MethodGet, alice, idle, ""); w.Code != http.StatusNotFound {
		t.Fatalf("expired session: %d", w.Code)
	}
	e.f.iss.Advance(2 * time.Minute)
	alice = e.tokenOf(t, "alice", "tenant-a")
	if w := e.do(t, http.MethodGet, alice, kept, ""); w.Code != http.StatusNotFound {
		t.Fatalf("expired on use: %d", w.Code)
	}
	e.srv.waitClosed(t, kept)
}

// TestAnonymousSession: a session created by a public operation is the
// anonymous principal's: the client's responses and notifications in it,
// its GET stream and its DELETE pass without a token; a token never joins
// it.
func TestAnonymousSession(t *testing.T) {
	e := newSessionEnv(t, nil)
	sid := e.create(t, "")
	alice := e.tokenOf(t, "alice", "tenant-a")
	for _, tc := range []struct {
		name, method, token, body string
		want                      int
	}{
		{"response", http.MethodPost, "", `{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`, 200},
		{"error response", http.MethodPost, "", `{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"declined"}}`, 200},
		{"notification", http.MethodPost, "", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, 200},
		{"public request", http.MethodPost, "", rpcBody(legacyRev, "ping", ""), 200},
		{"protected request", http.MethodPost, "", rpcBody(legacyRev, "tools/list", ""), 401},
		{"GET", http.MethodGet, "", "", 200},
		{"token POST", http.MethodPost, alice, rpcBody(legacyRev, "tools/list", ""), 404},
		{"token GET", http.MethodGet, alice, "", 404},
		{"token DELETE", http.MethodDelete, alice, "", 404},
		{"DELETE", http.MethodDelete, "", "", 204},
		{"after DELETE", http.MethodGet, "", "", 401},
	} {
		if w := e.do(t, tc.method, tc.token, sid, tc.body); w.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, w.Code, tc.want, w.Body)
		}
	}
	// A response without a session, or in an unknown one, is not public.
	for _, sid := range []string{"", "s-999"} {
		if w := e.do(t, http.MethodPost, "", sid, `{"jsonrpc":"2.0","id":7,"result":{}}`); w.Code != http.StatusUnauthorized {
			t.Errorf("response in session %q: %d, want 401", sid, w.Code)
		}
	}
}

// downOwnerStore is an OwnerStore that is down.
type downOwnerStore struct{ err error }

func (s downOwnerStore) Claim(context.Context, string, string, string, time.Duration) (string, error) {
	return "", s.err
}
func (s downOwnerStore) Owner(context.Context, string, string, time.Duration) (string, error) {
	return "", s.err
}
func (s downOwnerStore) Forget(context.Context, string, string) error { return s.err }

func TestSessionStoreOutage(t *testing.T) {
	var logs bytes.Buffer
	e := newSessionEnv(t, func(c *Config) {
		c.Sessions.Store = downOwnerStore{errors.New("dial tcp 127.0.0.1:6379: connection refused")}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	alice := e.tokenOf(t, "alice", "tenant-a")
	for i := 0; i < 3; i++ {
		if w := e.do(t, http.MethodGet, alice, "s-1", ""); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("store down, session ID: %d", w.Code)
		}
		if w := e.do(t, http.MethodPost, alice, "", ""); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("store down, new session: %d", w.Code)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d store failure records, want 1:\n%s", n, logs.String())
	}
	e.srv.waitClosed(t, "s-1")
}

// TestSessionSharedStore: with a shared store, a new Middleware (a
// restart, another replica) keeps the binding; without, it refuses every
// session it did not see created.
func TestSessionSharedStore(t *testing.T) {
	store := newMemoryOwnerStore(memoryOwnerConfig{})
	e := newSessionEnv(t, func(c *Config) { c.Sessions.Store = store })
	alice, bob := e.tokenOf(t, "alice", "tenant-a"), e.tokenOf(t, "bob", "tenant-b")
	sid := e.create(t, alice)

	restarted := e.f.with(t, func(c *Config) { c.Sessions.Store = store; c.Operations.Public.Methods = []string{"initialize"} })
	e2 := &sessionEnv{f: restarted, srv: e.srv, h: restarted.m.Handler(e.srv)}
	if w := e2.do(t, http.MethodGet, bob, sid, ""); w.Code != http.StatusNotFound {
		t.Fatalf("bob after restart: %d", w.Code)
	}
	if w := e2.do(t, http.MethodGet, alice, sid, ""); w.Code != http.StatusOK {
		t.Fatalf("alice after restart: %d", w.Code)
	}
	if w := e2.do(t, http.MethodDelete, alice, sid, ""); w.Code != http.StatusNoContent {
		t.Fatalf("alice DELETE after restart: %d", w.Code)
	}
	if o, _ := store.Owner(context.Background(), kindSession, sid, time.Minute); o != "" {
		t.Fatalf("DELETE left the record of %q", o)
	}

	sid = e.create(t, alice)
	memory := e.f.with(t, nil)
	e3 := &sessionEnv{f: memory, srv: e.srv, h: memory.m.Handler(e.srv)}
	if w := e3.do(t, http.MethodGet, alice, sid, ""); w.Code != http.StatusNotFound {
		t.Fatalf("memory store after restart: %d, want 404", w.Code)
	}
}

func TestPrincipalIsID(t *testing.T) {
	ps := []*Principal{
		nil,
		{Anonymous: true},
		{},
		{Issuer: "https://as", Subject: "alice", ClientID: "c", Tenant: "t"},
		{Issuer: "https://as", Subject: "alice:1", ClientID: "c"},
		{Issuer: strings.Repeat("i", 123), Subject: "a"},
		{ownerID: "9:anything"},
	}
	for i, p := range ps {
		for j, q := range ps {
			if got, want := p.isID(q.ID()), p.ID() == q.ID(); got != want {
				t.Errorf("%d.isID(%d.ID() = %q) = %v", i, j, q.ID(), got)
			}
		}
	}
	p := ps[3]
	for _, id := range []string{"", "010:https://as5:alice1:c1:t", "10:https://as5:alice1:c1:t1:x", "10:https://as5:alice1:c1:", "+10:https://as5:alice1:c1:t", anonymousID} {
		if p.isID(id) {
			t.Errorf("isID(%q)", id)
		}
	}
	if !p.isID("10:https://as5:alice1:c1:t") {
		t.Error("isID of its ID")
	}
}

func TestMemoryOwnerStore(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newMemoryOwnerStore(memoryOwnerConfig{Max: 3, PerOwner: 2, Now: func() time.Time { return now }})
	ctx := context.Background()
	claim := func(kind, id, owner, want string, wantErr error) {
		t.Helper()
		got, err := s.Claim(ctx, kind, id, owner, time.Minute)
		if got != want || !errors.Is(err, wantErr) {
			t.Fatalf("Claim(%s, %s, %s) = %q, %v; want %q, %v", kind, id, owner, got, err, want, wantErr)
		}
	}
	claim(kindSession, "1", "a", "a", nil)
	claim(kindTask, "1", "b", "b", nil)    // kinds do not collide
	claim(kindSession, "1", "b", "a", nil) // a's ID: unchanged
	claim(kindSession, "1", "a", "a", nil) // renewed
	claim(kindSession, "2", "a", "a", nil)
	claim(kindSession, "3", "c", "", errOwnersFull)
	claim(kindSession, "4", "a", "a", nil) // a's quota: its oldest goes
	if o, _ := s.Owner(ctx, kindSession, "1", time.Minute); o != "" {
		t.Fatalf("a's oldest kept by %q", o)
	}
	if o, _ := s.Owner(ctx, kindTask, "1", time.Minute); o != "b" {
		t.Fatalf("task 1: %q", o)
	}
	now = now.Add(2 * time.Minute)
	claim(kindSession, "3", "c", "c", nil) // the expired make room
	if o, _ := s.Owner(ctx, kindSession, "2", time.Minute); o != "" {
		t.Fatalf("expired record: %q", o)
	}
	if err := s.Forget(ctx, kindSession, "3"); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Owner(ctx, kindSession, "3", time.Minute); o != "" {
		t.Fatalf("forgotten record: %q", o)
	}
	if n := s.Len(); n > 3 {
		t.Fatalf("Len %d", n)
	}
}
