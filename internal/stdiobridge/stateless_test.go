package stdiobridge

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const modernRev = "2026-07-28"

// connectModern connects go-sdk's client speaking 2026-07-28 (stateless:
// server/discover, no initialize, no session).
func (h *harness) connectModern(t *testing.T, user string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: h.srv.URL, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: userRT{user, http.DefaultTransport}}}
	cs, err := c.Connect(ctxT(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: modernRev})
	if err != nil {
		t.Fatalf("connect %s as %s: %v", modernRev, user, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != modernRev {
		t.Fatalf("negotiated %q, want %s", v, modernRev)
	}
	return cs
}

// modernPost sends one stateless request as user, with the revision's
// headers.
func modernPost(t *testing.T, url, user, method, sid, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modernRev)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set(userHeader, user)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func modernBody(id, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernRev + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
}

// TestStateless: 2026-07-28 clients through the bridge. Two stateless
// clients of one user share that user's process (one counter), another
// user's never does, and a session of the same user has its own; the
// proxy speaks the stateless wire in front (server/discover, resultType,
// cache fields, no session id, 405 for GET) and drives the child's
// initialize behind.
func TestStateless(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := ctxT(t)
	a1 := h.connectModern(t, "alice")
	a2 := h.connectModern(t, "alice")
	b1 := h.connectModern(t, "bob")
	for i, step := range []struct {
		cs   *mcp.ClientSession
		who  string
		want string
	}{
		{a1, "alice 1", `{"text":"1"}`},
		{a2, "alice 2", `{"text":"2"}`},
		{a1, "alice 1", `{"text":"3"}`},
		{b1, "bob", `{"text":"1"}`},
	} {
		if got, err := callText(ctx, step.cs, "incr"); err != nil || got != step.want {
			t.Fatalf("step %d: %s incr = %q, %v; want %s", i, step.who, got, err, step.want)
		}
	}
	if got, err := callText(ctx, a2, "whoami"); err != nil || !strings.Contains(got, "sub=alice ") {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	if n := h.b.Children(); n != 2 {
		t.Fatalf("children = %d, want 2 (one per user)", n)
	}
	// A 2025-11-25 session of alice has a process of its own.
	s := h.connect(t, "alice", nil)
	if got, err := callText(ctx, s, "incr"); err != nil || got != `{"text":"1"}` {
		t.Fatalf("alice's session incr = %q, %v; want 1", got, err)
	}
	// A tool that asks the client (sampling) fails: a stateless client
	// receives no server-to-client request.
	res, err := a1.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Method not found") {
		t.Fatalf("sampling through a stateless request: %+v, %v; want the tool's error (the bridge answers the child -32601)", res, err)
	}

	resp := rawPost(t, h.srv.URL, "alice", "", initBody)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	for _, tc := range []struct {
		name, method, sid, body string
		status                  int
		want                    []string
	}{
		{"discover", "server/discover", "", modernBody("1", "server/discover", ""), http.StatusOK,
			[]string{`"id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","supportedVersions":["2026-07-28"],"capabilities":{`,
				`"tools":{}`, `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"counter"`}},
		{"tools/list", "tools/list", "", modernBody(`"x"`, "tools/list", ""), http.StatusOK,
			[]string{`"id":"x","result":{"resultType":"complete",`, `"ttlMs":0,`, `"cacheScope":`, `"tools":[{`}},
		{"tools/call, a session id ignored", "tools/call", sid, modernBody("2", "tools/call", `"name":"incr","arguments":{},`), http.StatusOK,
			[]string{`"id":2,"result":{"resultType":"complete",`, `"content":[{"type":"text","text":"{\"text\":\"4\"}"}]`}},
		{"subscriptions/listen", "subscriptions/listen", "", modernBody("3", "subscriptions/listen", `"notifications":{},`), http.StatusNotFound,
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}`}},
		{"initialize", "initialize", "", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			http.StatusBadRequest, []string{`"id":4,"error":{"code":-32600`}},
		{"notification", "notifications/cancelled", "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, http.StatusAccepted, nil},
	} {
		resp, body := modernPost(t, h.srv.URL, "alice", tc.method, tc.sid, tc.body)
		if resp.StatusCode != tc.status || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %d (Mcp-Session-Id %q) %s; want %d and no session id", tc.name, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body, tc.status)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s\nmissing %s", tc.name, body, w)
			}
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, h.srv.URL, nil)
		req.Header.Set("Mcp-Protocol-Version", modernRev)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(userHeader, "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow POST", modernRev, m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	// The stateless child is not a session: its id is unknown to a
	// 2025-11-25 request.
	h.b.mu.Lock()
	statelessID := h.b.shared[statelessKey(User{Key: "https://as.example|alice"})].s.id
	h.b.mu.Unlock()
	resp = rawPost(t, h.srv.URL, "alice", statelessID, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the stateless child's id as a session: %d, want 404", resp.StatusCode)
	}
}

// TestStatelessBoundsAndIdle: a user's stateless child counts against
// max_per_user: idle, it makes room for the user's session (evict.go);
// with the user's one child busy, a stateless request gets 503. It is
// stopped when idle and reaped, and the next stateless request starts a
// fresh one.
func TestStatelessBoundsAndIdle(t *testing.T) {
	call := modernBody("1", "tools/call", `"name":"incr","arguments":{},`)
	alice := User{Key: "https://as.example|alice"}
	t.Run("bound", func(t *testing.T) {
		h := newHarness(t, Config{MaxPerUser: 1})
		resp, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", call)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `\"1\"`) {
			t.Fatalf("first call: %d %s", resp.StatusCode, body)
		}
		// alice's one process is her idle stateless child: it is ended
		// for her session.
		sid := open(t, h, "alice")
		if n := h.b.Children(); n != 1 {
			t.Errorf("children after the session's initialize: %d, want 1", n)
		}
		// The session busy (its GET stream open), a stateless request
		// finds no room.
		defer openGET(t, h, "alice", sid).Body.Close()
		resp, body = modernPost(t, h.srv.URL, "alice", "tools/call", "", call)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfter {
			t.Fatalf("a second process of alice, her session busy: %d Retry-After %q %s, want 503", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
	t.Run("idle", func(t *testing.T) {
		h := newHarness(t, Config{IdleTimeout: 100 * time.Millisecond, StopGrace: 100 * time.Millisecond})
		resp, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", call)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `\"1\"`) {
			t.Fatalf("first call: %d %s", resp.StatusCode, body)
		}
		h.b.mu.Lock()
		var pid int
		if sc := h.b.shared[statelessKey(alice)]; sc != nil && sc.s != nil {
			pid = sc.s.ch.cmd.Process.Pid
		}
		h.b.mu.Unlock()
		waitFor(t, func() bool { return h.b.Children() == 0 && (pid == 0 || !alive(pid)) })
		resp, body = modernPost(t, h.srv.URL, "alice", "tools/call", "", call)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `\"1\"`) {
			t.Fatalf("after the idle stop: %d %s, want a fresh counter", resp.StatusCode, body)
		}
	})
}

// TestStatelessConcurrentStart: concurrent first requests of one user
// start one child.
func TestStatelessConcurrentStart(t *testing.T) {
	h := newHarness(t, Config{})
	const n = 8
	errs := make(chan string, n)
	for range n {
		go func() {
			resp, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", modernBody("1", "tools/call", `"name":"incr","arguments":{},`))
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"resultType":"complete"`) {
				errs <- body
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Errorf("call: %s", e)
		}
	}
	if c := h.b.Children(); c != 1 {
		t.Fatalf("children = %d, want 1", c)
	}
	resp, body := modernPost(t, h.srv.URL, "alice", "tools/call", "", modernBody("1", "tools/call", `"name":"incr","arguments":{},`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `\"9\"`) {
		t.Fatalf("ninth call: %d %s, want 9 (one counter)", resp.StatusCode, body)
	}
}

// TestModernResultCacheScope: a cacheable result of a child leaves the
// bridge with cacheScope "private" whatever the child said (its child
// serves one user); other members and other methods are untouched. The
// "public" cases kept the child's value before.
func TestModernResultCacheScope(t *testing.T) {
	tests := []struct{ method, in, want string }{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[],"cacheScope":"private","ttlMs":60000}}`},
		{"resources/read", `{"jsonrpc":"2.0","id":"r","result":{"resultType":"complete","cacheScope": "public" ,"contents":[]}}`,
			`{"jsonrpc":"2.0","id":"r","result":{"ttlMs":0,"resultType":"complete","cacheScope": "private" ,"contents":[]}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":5,"cacheScope":"private"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":5,"cacheScope":"private"}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"cacheScope":"public"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"cacheScope":"public"}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`},
	}
	var pool strictjson.Pool
	for _, tt := range tests {
		if got := string(modernResult(&pool, tt.method, []byte(tt.in))); got != tt.want {
			t.Errorf("modernResult(%s, %s)\n got %s\nwant %s", tt.method, tt.in, got, tt.want)
		}
	}
}

// TestStartTimeoutAnswers: a child that never answers initialize gets the
// same answer whichever way it was started (its own session, a user's
// shared child, a user's stateless child): 504 "Server did not start".
// The stateless way answered 502 "Server unavailable" before the three
// shared one rule.
func TestStartTimeoutAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perUser bool
	}{
		{"session", false},
		{"per user", true},
		{"stateless", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Command: []string{"sleep", "60"}, StartTimeout: 300 * time.Millisecond, StopGrace: 100 * time.Millisecond, PerUser: tc.perUser})
			var resp *http.Response
			var body string
			if tc.name == "stateless" {
				resp, body = modernPost(t, h.srv.URL, "alice", "tools/list", "", modernBody("7", "tools/list", ""))
			} else {
				resp = rawPost(t, h.srv.URL, "alice", "", initBody)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
			}
			if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(body, `"message":"Server did not start"`) {
				t.Fatalf("%d %s; want 504 Server did not start", resp.StatusCode, body)
			}
		})
	}
}
