package proxy_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/stdiobridge/testserver"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestStdioAnswerOverEventBound: the middleware in front removes an SSE
// event over its answer bound (4 MiB, docs/policy.md), so a child's
// answer within max_message_bytes but too large for one event would
// leave its client with a stream that ends without an answer. It reaches
// the client as -32603 "Response too large" instead, the session going
// on; a client that takes JSON (no text/event-stream) gets it whole.
func TestStdioAnswerOverEventBound(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.Upstream = ""
		r.Stdio = proxy.Stdio{Command: []string{exe}, Env: map[string]string{testserver.Env: "1"}, MaxMessageBytes: 16 << 20}
	}})
	tok := e.token(t, "alice", baseScope)
	hdr := func(accept, sid string) http.Header {
		h := http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "Accept": {accept},
			"Mcp-Protocol-Version": {"2025-11-25"}}
		if sid != "" {
			h.Set("Mcp-Session-Id", sid)
		}
		return h
	}
	const both = "application/json, text/event-stream"
	post := func(body string, h http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.resource, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, hdr(both, ""))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	resp = do(t, "POST", e.resource, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr(both, sid))
	resp.Body.Close()
	// big's answer holds its text twice: about 6 MiB, within
	// max_message_bytes, over the event bound.
	big := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big","arguments":{"n":3145728}}}`
	resp = do(t, "POST", e.resource, big, hdr(both, sid))
	var msgs []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 32<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
			msgs = append(msgs, d)
		}
	}
	resp.Body.Close()
	const want = `{"jsonrpc":"2.0","id":"big","error":{"code":-32603,"message":"Response too large"}}`
	if resp.StatusCode != http.StatusOK || len(msgs) != 1 || msgs[0] != want {
		short := make([]string, len(msgs))
		for i, m := range msgs {
			short[i] = m[:min(len(m), 100)]
		}
		t.Fatalf("SSE answer over the event bound: %d %q, want 200 with %s", resp.StatusCode, short, want)
	}
	resp = post(big, hdr("application/json", sid))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) < 6<<20 || !strings.HasPrefix(string(body), `{"jsonrpc":"2.0","id":"big","result":`) {
		t.Fatalf("JSON answer: %d, %d bytes %.100s, want 200 with the whole answer", resp.StatusCode, len(body), body)
	}
	resp = do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"incr","arguments":{}}}`, hdr("application/json", sid))
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("the session after: %d %s, want 200 with a result", resp.StatusCode, body)
	}
}

// TestStdioStartTimeoutAnswer: what a client of the proxy gets when a
// child never answers initialize within start_timeout (docs/proxy.md,
// "Bounds and faults"): the proxy's 502, as for an upstream that
// answered 5xx, not the bridge's own 504, and the child is stopped.
func TestStdioStartTimeoutAnswer(t *testing.T) {
	before := len(childPIDs(t))
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.Upstream = ""
		r.Stdio = proxy.Stdio{Command: []string{"/bin/sleep", "3600"}, StartTimeout: 200 * time.Millisecond, StopGrace: 100 * time.Millisecond}
	}})
	hdr := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}, "Mcp-Protocol-Version": {"2025-11-25"}}
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, hdr)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Bad Gateway"}}`
	if resp.StatusCode != http.StatusBadGateway || strings.TrimSpace(string(body)) != want || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize past start_timeout: %d %s (session %q), want 502 %s", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"), want)
	}
	if left := childPIDs(t); len(left) != before {
		t.Fatalf("after the start timeout: children %v, want %d (the child stopped and reaped)", left, before)
	}
}

// TestStdioAnswers: the answers of a stdio route a client of the proxy
// sees, exactly (docs/proxy.md, "Answers of a stdio route"), for what
// the other tests do not pin.
func TestStdioAnswers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.Upstream = ""
		r.Stdio = proxy.Stdio{Command: []string{exe}, Env: map[string]string{testserver.Env: "1"}, MaxPerUser: 1}
	}})
	tok := e.token(t, "alice", baseScope)
	req := func(method, body string, hdr map[string]string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(method, e.resource, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	const (
		both   = "application/json, text/event-stream"
		rev    = "2025-11-25"
		initRq = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	)
	resp := req(http.MethodPost, initRq, map[string]string{"Accept": both, "Mcp-Protocol-Version": rev})
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	// The session's GET stream, held open: the session is busy (not
	// idle), and a second GET conflicts.
	get := req(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Mcp-Protocol-Version": rev, "Mcp-Session-Id": sid})
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	for _, tc := range []struct {
		name, method, body string
		hdr                map[string]string
		status             int
		want               string
		retryAfter         string
	}{
		{"a second GET stream", http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Mcp-Protocol-Version": rev, "Mcp-Session-Id": sid},
			http.StatusConflict, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Conflict: a stream is already open"}}`, ""},
		{"GET without text/event-stream", http.MethodGet, "", map[string]string{"Accept": "application/json", "Mcp-Protocol-Version": rev, "Mcp-Session-Id": sid},
			http.StatusNotAcceptable, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Not Acceptable: text/event-stream required"}}`, ""},
		{"GET without a session", http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Mcp-Protocol-Version": rev},
			http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Mcp-Session-Id required"}}`, ""},
		{"DELETE without a session", http.MethodDelete, "", map[string]string{"Mcp-Protocol-Version": rev},
			http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Mcp-Session-Id required"}}`, ""},
		{"a request without a session", http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, map[string]string{"Accept": both, "Mcp-Protocol-Version": rev},
			http.StatusBadRequest, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Bad Request: initialize a session, or send a stateless request"}}`, ""},
		{"initialize in a session", http.MethodPost, initRq, map[string]string{"Accept": both, "Mcp-Protocol-Version": rev, "Mcp-Session-Id": sid},
			http.StatusBadRequest, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Session already initialized"}}`, ""},
		{"initialize at max_per_user, the user's child busy", http.MethodPost, initRq, map[string]string{"Accept": both, "Mcp-Protocol-Version": rev},
			http.StatusServiceUnavailable, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Service Unavailable"}}`, "5"},
		{"a stateless GET", http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Mcp-Protocol-Version": "2026-07-28"},
			http.StatusMethodNotAllowed, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Method not allowed"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := req(tc.method, tc.body, tc.hdr)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || strings.TrimSpace(string(body)) != tc.want || resp.Header.Get("Retry-After") != tc.retryAfter {
				t.Fatalf("%d %s Retry-After %q, want %d %s %q", resp.StatusCode, body, resp.Header.Get("Retry-After"), tc.status, tc.want, tc.retryAfter)
			}
		})
	}
}

// TestStdioStepUpKeepsChild: a user who steps up mid-session (a new
// token with more scope, the same session) keeps his child and its
// state: the call refused with 403 insufficient_scope reaches the same
// process once the token has the scope.
func TestStdioStepUpKeepsChild(t *testing.T) {
	e := stdioEnv(t, "")
	post := func(tok, sid, body string) (*http.Response, string) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, e.resource, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	call := func(id, tool string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	base := e.token(t, "alice", baseScope)
	resp, _ := post(base, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, sid)
	}
	if _, body := post(base, sid, call("2", "incr")); !strings.Contains(body, `{\"text\":\"1\"}`) {
		t.Fatalf("incr: %s", body)
	}
	if resp, _ := post(base, sid, call("3", "admin_only")); resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("admin_only with the base scope: %d %q, want 403 insufficient_scope", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	admin := e.token(t, "alice", baseScope, adminScope)
	if _, body := post(admin, sid, call("4", "admin_only")); !strings.Contains(body, `admin:alice`) {
		t.Fatalf("admin_only after the step-up: %s", body)
	}
	if _, body := post(admin, sid, call("5", "incr")); !strings.Contains(body, `{\"text\":\"2\"}`) {
		t.Fatalf("incr after the step-up: %s, want 2 (the same child)", body)
	}
}
