package middleware

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSessionUpgrade: a 101 Switching Protocols from the next handler
// fails closed: the client gets 502 with mcpguard proxy's Bad Gateway
// body, never the 101, the Upgrade header or a session ID; no session is
// bound (the ID the 101 named is unknown afterwards, 404) and the server
// is told to close it (an internal DELETE); in a live session the 101 is
// 502 too and the session lives on. A handler that tries to take the
// connection over (http.ResponseController.Hijack) gets an error. Before,
// the 101 was the final answer: its Mcp-Session-Id was bound to the
// principal and sent.
func TestSessionUpgrade(t *testing.T) {
	e := newSessionEnv(t, nil)
	var mu sync.Mutex
	var deleted []string
	var hijackErr error
	upgrade := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodDelete {
			mu.Lock()
			deleted = append(deleted, r.Header.Get("Mcp-Session-Id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Header.Get("X-Hijack") != "" {
			c, _, err := http.NewResponseController(w).Hijack()
			mu.Lock()
			hijackErr = err
			mu.Unlock()
			if err == nil {
				c.Close() // taken over: the client gets no HTTP answer
				return
			}
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			w.Header().Set("Mcp-Session-Id", "upgraded-1")
		}
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusSwitchingProtocols)
		_, _ = w.Write([]byte("raw bytes of another protocol"))
	})
	h := e.f.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Upgrade") != "" || r.Method == http.MethodDelete && r.Header.Get("Mcp-Session-Id") == "upgraded-1" {
			upgrade.ServeHTTP(w, r)
			return
		}
		e.srv.ServeHTTP(w, r)
	}))
	e.h = h
	srv := httptest.NewServer(h) // for Hijack: a real connection
	t.Cleanup(srv.Close)
	alice := e.tokenOf(t, "alice", "tenant-a")
	do := func(sid string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(rpcBody(legacyRev, "initialize", "")))
		if hdr[len(hdr)-2] == "X-Hijack" {
			req, _ = http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(rpcBody(legacyRev, "initialize", "")))
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", legacyRev)
		req.Header.Set("Authorization", "Bearer "+alice)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		var resp *http.Response
		if req.RequestURI == "" {
			var err error
			if resp, err = srv.Client().Do(req); err != nil {
				t.Fatalf("the request whose handler tried Hijack: %v", err)
			}
		} else {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			resp = w.Result()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	check := func(name string, resp *http.Response, body string) {
		t.Helper()
		if resp.StatusCode != http.StatusBadGateway || body != bodyBadGateway {
			t.Errorf("%s: %d %s, want 502 %s", name, resp.StatusCode, body, bodyBadGateway)
		}
		for _, k := range []string{"Mcp-Session-Id", "Upgrade"} {
			if v := resp.Header.Get(k); v != "" {
				t.Errorf("%s: %s: %q sent", name, k, v)
			}
		}
	}

	resp, body := do("", "X-Upgrade", "1")
	check("initialize answered 101", resp, body)
	e.f.m.sessions.mu.Lock()
	bound := e.f.m.sessions.t.byID["upgraded-1"] != nil
	e.f.m.sessions.mu.Unlock()
	if bound {
		t.Error("the 101's session was bound")
	}
	if resp, _ := do("upgraded-1", "X-None", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the 101's session ID afterwards: %d, want 404", resp.StatusCode)
	}
	for i := 0; i < 3000; i++ { // the close runs in the background
		mu.Lock()
		n := len(deleted)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(deleted) != 1 || deleted[0] != "upgraded-1" {
		t.Errorf("internal DELETEs %q, want the 101's session closed", deleted)
	}
	mu.Unlock()

	sid := e.create(t, alice)
	resp, body = do(sid, "X-Upgrade", "1", "X-Hijack", "1")
	check("101 in a session", resp, body)
	mu.Lock()
	if !errors.Is(hijackErr, errHijack) {
		t.Errorf("Hijack: %v, want errHijack", hijackErr)
	}
	mu.Unlock()
	if w := e.do(t, http.MethodGet, alice, sid, ""); w.Code != http.StatusOK {
		t.Errorf("the session after a 101 in it: %d, want 200", w.Code)
	}
}
