package stdiobridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The attacks of a hostile user, a hostile child (hostile_test.go) and
// a careless operator on the bridge: each test that passes documents a
// defence.

// hostileUsers are the users of newHostile's bridge, by the test header.
var hostileUsers = map[string]User{
	"alice": {Key: "u-alice", Issuer: "https://as.example", Subject: "alice", Tenant: "t1", Client: "c1"},
	"bob":   {Key: "u-bob", Issuer: "https://as.example", Subject: "bob", Tenant: "t1", Client: "c1"},
}

// newHostile is a bridge in front of hostileMain children; users names
// the users by the test header (nil: hostileUsers).
func newHostile(t *testing.T, cfg Config, users map[string]User) *harness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if users == nil {
		users = hostileUsers
	}
	cfg.Command = []string{exe}
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env[hostileEnv] = "1"
	cfg.User = func(r *http.Request) (User, bool) {
		u, ok := users[r.Header.Get(userHeader)]
		return u, ok
	}
	lb := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(lb, nil))
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{b: b, log: lb}
	h.srv = httptest.NewServer(b)
	t.Cleanup(func() {
		_ = b.Close() // first: it ends the requests in flight
		h.srv.Close()
	})
	return h
}

// answer is what a POST got: its status, header and messages (SSE
// events' data, or the JSON body).
type answer struct {
	status int
	header http.Header
	msgs   []string
}

// last is the last message (the response), or "".
func (a answer) last() string {
	if len(a.msgs) == 0 {
		return ""
	}
	return a.msgs[len(a.msgs)-1]
}

// text is the first text content of the last message's result.
func (a answer) text() string {
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(a.last()), &r) != nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

func readAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				a.msgs = append(a.msgs, d)
			}
		}
		return a
	}
	b, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(b)) > 0 {
		a.msgs = append(a.msgs, string(b))
	}
	return a
}

func post(t *testing.T, h *harness, user, sid, body string) answer {
	t.Helper()
	return readAnswer(t, rawPost(t, h.srv.URL, user, sid, body))
}

// open initializes a session of user and returns its id.
func open(t *testing.T, h *harness, user string) string {
	t.Helper()
	a := post(t, h, user, "", initBody)
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize as %s: %d %v", user, a.status, a.msgs)
	}
	if a := post(t, h, user, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != http.StatusAccepted {
		t.Fatalf("initialized: %d", a.status)
	}
	return sid
}

func toolBody(id, name, args string) string {
	if args == "" {
		args = "{}"
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

func tool(t *testing.T, h *harness, user, sid, name, args string) answer {
	t.Helper()
	return post(t, h, user, sid, toolBody("1", name, args))
}

// TestAttackProtocol: messages that are not one JSON-RPC 2.0 message
// (MCP 2025-11-25 has no batches) get 400 and never reach the child;
// odd but valid ids come back byte for byte.
func TestAttackProtocol(t *testing.T) {
	h := newHostile(t, Config{MaxMessageBytes: 64 << 10}, nil)
	sid := open(t, h, "alice")
	pid := tool(t, h, "alice", sid, "pid", "").text()
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	for _, tc := range []struct{ name, body string }{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{"empty batch", `[]`},
		{"notification with null id", `{"jsonrpc":"2.0","id":null,"method":"notifications/x"}`},
		{"request with object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`},
		{"request with bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`},
		{"request with array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`},
		{"response with result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`},
		{"no jsonrpc", `{"id":1,"method":"ping"}`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`},
		{"case-variant ID", `{"jsonrpc":"2.0","ID":1,"method":"ping"}`},
		{"case-variant Method", `{"jsonrpc":"2.0","id":1,"method":"ping","Method":"initialize"}`},
		{"escaped duplicate", `{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"ping"}`},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}"},
		{"lone surrogate", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`},
		{"BOM", "\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"two messages", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep + `}`},
		{"over max_message_bytes", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 64<<10) + `"}}`},
		{"initialize replayed", initBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := post(t, h, "alice", sid, tc.body)
			if a.status != http.StatusBadRequest {
				t.Fatalf("%s: %d %v, want 400", tc.name, a.status, a.msgs)
			}
		})
	}
	for _, id := range []string{`1e999999`, `-0`, `"\u0031"`, `"1"`, `1`, `123456789012345678901234567890`, `"` + strings.Repeat("i", 4096) + `"`} {
		a := post(t, h, "alice", sid, toolBody(id, "echo_id", ""))
		var r struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(a.last()), &r); err != nil || string(r.ID) != id || a.text() == id {
			t.Errorf("id %s: answered %d %s; want the id back byte for byte, renumbered for the child", id, a.status, a.last())
		}
	}
	if got := tool(t, h, "alice", sid, "pid", "").text(); got != pid || pid == "" {
		t.Fatalf("pid %q after the attacks, want %q: the child was not touched", got, pid)
	}
	if got := tool(t, h, "alice", sid, "notes", "").text(); got != "notifications/initialized" {
		t.Fatalf("notifications the child got: %q, want only notifications/initialized", got)
	}
}

// inflight starts a "wait" tool call with id in session sid and returns
// a channel of its answer, once the child has it.
func inflight(t *testing.T, h *harness, user, sid, id string) <-chan answer {
	t.Helper()
	ch := make(chan answer, 1)
	resp := rawPost(t, h.srv.URL, user, sid, toolBody(id, "wait", ""))
	go func() { ch <- readAnswer(t, resp) }()
	return ch
}

// pendingCalls is the number of calls in flight in the child of sid.
func pendingCalls(h *harness, sid string) int {
	s, _ := h.b.lookup(sid)
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight)
}

// TestAttackIDs: ids that are equal after decoding ("1" and "\u0031")
// or across types ("1" and 1), and a duplicate id in flight, each get
// their own answer, and a cancellation reaches only the request of that
// raw id.
func TestAttackIDs(t *testing.T) {
	h := newHostile(t, Config{}, nil)
	sid := open(t, h, "alice")
	ids := []string{`"1"`, `1`, `"\u0031"`, `7`, `7`}
	var chs []<-chan answer
	for _, id := range ids {
		chs = append(chs, inflight(t, h, "alice", sid, id))
	}
	waitFor(t, func() bool { return pendingCalls(h, sid) == len(ids) })
	// Cancel "1" only: the child gets exactly one cancellation.
	if a := post(t, h, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}`); a.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", a.status)
	}
	waitFor(t, func() bool { return tool(t, h, "alice", sid, "cancels", "").text() != "" })
	if got := tool(t, h, "alice", sid, "cancels", "").text(); strings.Count(got, ",") != 0 || got == "" {
		t.Fatalf("cancellations the child got: %q, want one", got)
	}
	tool(t, h, "alice", sid, "release", "")
	// The child answers the cancelled request too (it may have got the
	// cancellation before it began to wait): the answer goes to its client.
	if a := <-chs[0]; a.text() != "answer after cancellation" && a.text() != "released" {
		t.Errorf("cancelled request: %v", a.msgs)
	}
	for i, ch := range chs[1:] {
		a := <-ch
		var r struct{ ID json.RawMessage }
		_ = json.Unmarshal([]byte(a.last()), &r)
		if a.text() != "released" || string(r.ID) != ids[i+1] {
			t.Errorf("request %s: %s, want released with its own id", ids[i+1], a.last())
		}
	}
}

// TestAttackCancelAcrossSessions: on a per-user child, a session cannot
// cancel a request of another session (of the same user, or of another
// user) by its client id, nor by the id the child sees.
func TestAttackCancelAcrossSessions(t *testing.T) {
	h := newHostile(t, Config{PerUser: true}, nil)
	a1, a2, b1 := open(t, h, "alice"), open(t, h, "alice"), open(t, h, "bob")
	ch := inflight(t, h, "alice", a1, "5")
	waitFor(t, func() bool { return pendingCalls(h, a1) == 1 })
	s, _ := h.b.lookup(a1)
	s.mu.Lock()
	childKey := s.inflight[0].childKey
	s.mu.Unlock()
	for _, tc := range []struct{ user, sid, id string }{
		{"alice", a2, "5"}, {"alice", a2, childKey}, {"alice", a2, `"5"`}, {"bob", b1, "5"}, {"bob", b1, childKey},
	} {
		body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + tc.id + `}}`
		if a := post(t, h, tc.user, tc.sid, body); a.status != http.StatusAccepted {
			t.Fatalf("cancel from %s: %d", tc.user, a.status)
		}
	}
	if a := post(t, h, "bob", a1, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`); a.status != http.StatusNotFound {
		t.Fatalf("bob in alice's session: %d, want 404", a.status)
	}
	if got := tool(t, h, "alice", a2, "cancels", "").text(); got != "" {
		t.Fatalf("child got cancellations %q, want none", got)
	}
	tool(t, h, "alice", a2, "release", "")
	if a := <-ch; a.text() != "released" {
		t.Fatalf("alice's request: %v, want released", a.msgs)
	}
}

// TestAttackAnswerOtherChild: a child's request to its client
// (elicitation) can be answered only in its own session: another user's
// answer with the same id, in his own session or naming the other's,
// never reaches it. A child request whose id equals the id of the
// request it serves is carried and answered without confusing the two.
func TestAttackAnswerOtherChild(t *testing.T) {
	h := newHostile(t, Config{}, nil)
	a, b := open(t, h, "alice"), open(t, h, "bob")
	resp := rawPost(t, h.srv.URL, "alice", a, toolBody("3", "ask", `{"id":"\"q\""}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ask: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var askID json.RawMessage
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m struct {
				ID     json.RawMessage
				Method string
			}
			_ = json.Unmarshal([]byte(d), &m)
			if m.Method != "elicitation/create" {
				t.Fatalf("first event %s, want the child's elicitation", d)
			}
			askID = m.ID
			break
		}
	}
	forged := `{"jsonrpc":"2.0","id":` + string(askID) + `,"result":{"action":"accept","content":{"who":"bob"}}}`
	if got := post(t, h, "bob", b, forged); got.status != http.StatusAccepted {
		t.Fatalf("bob's answer in his session: %d, want 202 (dropped)", got.status)
	}
	if got := post(t, h, "bob", a, forged); got.status != http.StatusNotFound {
		t.Fatalf("bob's answer in alice's session: %d, want 404", got.status)
	}
	// A response to a request the child never sent, with the id of the
	// request in flight as the child sees it, is dropped too.
	if got := post(t, h, "alice", a, `{"jsonrpc":"2.0","id":2,"result":{}}`); got.status != http.StatusAccepted {
		t.Fatalf("answer to nothing: %d", got.status)
	}
	if got := post(t, h, "alice", a, `{"jsonrpc":"2.0","id":`+string(askID)+`,"result":{"action":"accept","content":{"who":"alice"}}}`); got.status != http.StatusAccepted {
		t.Fatalf("alice's answer: %d", got.status)
	}
	rest := readAnswer(t, &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(readerOf(sc))})
	if txt := rest.text(); !strings.Contains(txt, `"who":"alice"`) || strings.Contains(txt, "bob") {
		t.Fatalf("the child got %q, want alice's answer only", txt)
	}
	var r struct{ ID json.RawMessage }
	_ = json.Unmarshal([]byte(rest.last()), &r)
	if string(r.ID) != "3" {
		t.Fatalf("tool answer id %s, want 3", r.ID)
	}
	resp.Body.Close()
}

// readerOf returns the rest of sc's input as lines.
func readerOf(sc *bufio.Scanner) io.Reader {
	var buf bytes.Buffer
	for sc.Scan() {
		buf.Write(sc.Bytes())
		buf.WriteByte('\n')
	}
	return &buf
}

// TestAttackEndedSession: a session id is never reused: after DELETE
// (or a crash) it is 404 for its user and everyone else, and a new
// session gets a new id and a new process.
func TestAttackEndedSession(t *testing.T) {
	h := newHostile(t, Config{}, nil)
	sid := open(t, h, "alice")
	pid := tool(t, h, "alice", sid, "pid", "").text()
	req, _ := http.NewRequest(http.MethodDelete, h.srv.URL, nil)
	req.Header.Set(userHeader, "bob")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob deletes alice's session: %d, want 404", resp.StatusCode)
	}
	req.Header.Set(userHeader, "alice")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	for _, u := range []string{"alice", "bob"} {
		if a := tool(t, h, u, sid, "pid", ""); a.status != http.StatusNotFound {
			t.Fatalf("%s in the deleted session: %d, want 404", u, a.status)
		}
	}
	sid2 := open(t, h, "alice")
	if sid2 == sid || tool(t, h, "alice", sid2, "pid", "").text() == pid {
		t.Fatalf("new session %s (pid %s) reuses the old one's id or process", sid2, pid)
	}
}

// TestAttackStatelessIsolation: while alice's stateless child is busy,
// bob's stateless request gets a process of its own, never hers.
func TestAttackStatelessIsolation(t *testing.T) {
	h := newHostile(t, Config{}, nil)
	statelessPost := func(user, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modernRevision)
		req.Header.Set(userHeader, user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	alicePID := readAnswer(t, statelessPost("alice", toolBody("1", "pid", ""))).text()
	resp := statelessPost("alice", toolBody("2", "wait", ""))
	ch := make(chan answer, 1)
	go func() { ch <- readAnswer(t, resp) }()
	bobPID := readAnswer(t, statelessPost("bob", toolBody("2", "pid", ""))).text()
	if bobPID == "" || alicePID == "" || bobPID == alicePID {
		t.Fatalf("bob's stateless pid %q, alice's %q: want two processes", bobPID, alicePID)
	}
	if got := readAnswer(t, statelessPost("bob", toolBody("3", "release", ""))).text(); got != "ok" {
		t.Fatalf("bob's release: %q", got)
	}
	select {
	case a := <-ch:
		t.Fatalf("bob's call reached alice's child: her wait ended with %v", a.msgs)
	default:
	}
	if got := readAnswer(t, statelessPost("alice", toolBody("3", "release", ""))).text(); got != "ok" {
		t.Fatalf("alice's release: %q", got)
	}
	if a := <-ch; a.text() != "released" {
		t.Fatalf("alice's wait: %v", a.msgs)
	}
}

// TestAttackHostileChild: what a child writes that is not an answer it
// owes ends it (or is dropped), never reaches a client raw, and never
// leaves the bridge waiting.
func TestAttackHostileChild(t *testing.T) {
	const maxMsg = 64 << 10
	ended := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Server process ended"}}`
	for _, tc := range []struct {
		tool, args string
		want       string // the tool's text, or ended
		alive      bool   // the session serves another request after
		log        string
	}{
		{tool: "wrong_id", want: "ok", alive: true, log: "child answer to no request in flight dropped"},
		{tool: "twice", want: "first", alive: true},
		{tool: "crlf", want: "crlf", alive: true},
		{tool: "huge", args: `{"n":` + strconv.Itoa(maxMsg) + `}`, want: "after huge", alive: true},
		{tool: "huge", args: `{"n":` + strconv.Itoa(maxMsg+1) + `}`, want: ended, log: "over max_message_bytes"},
		{tool: "huge", args: `{"n":` + strconv.Itoa(8*maxMsg) + `}`, want: ended, log: "over max_message_bytes"},
		{tool: "badutf8", want: ended, log: "not a JSON-RPC message"},
		{tool: "bom", want: ended, log: "not a JSON-RPC message"},
		{tool: "partial", want: ended, log: "request timeout"},
		{tool: "close_stdout", want: ended, log: "stdout closed"},
		{tool: "exit_buffered", want: "last words", log: "stdio: child ended"},
		{tool: "stderr_flood", args: `{"mb":100}`, want: "stderr flooded", alive: true, log: "after the flood"},
	} {
		t.Run(tc.tool+tc.args, func(t *testing.T) {
			h := newHostile(t, Config{MaxMessageBytes: maxMsg, RequestTimeout: time.Second, StopGrace: 200 * time.Millisecond}, nil)
			sid := open(t, h, "alice")
			pid, _ := strconv.Atoi(tool(t, h, "alice", sid, "pid", "").text())
			a := tool(t, h, "alice", sid, tc.tool, tc.args)
			got := a.text()
			if tc.want == ended {
				got = a.last()
			}
			if got != tc.want {
				t.Fatalf("%s: %d %v, want %s", tc.tool, a.status, a.msgs, tc.want)
			}
			for _, m := range a.msgs {
				if (!tc.alive && strings.Contains(m, "xxxxxxxx")) || strings.Contains(m, "forged") || !json.Valid([]byte(m)) {
					t.Fatalf("the client got %.200s", m)
				}
			}
			next := tool(t, h, "alice", sid, "pid", "")
			if tc.alive {
				if next.text() != strconv.Itoa(pid) {
					t.Fatalf("after %s: %d %v, want the same child", tc.tool, next.status, next.msgs)
				}
			} else {
				if next.status != http.StatusNotFound && next.last() != ended {
					t.Fatalf("after %s: %d %v, want 404 or the child's end", tc.tool, next.status, next.msgs)
				}
				waitFor(t, func() bool { return h.b.Children() == 0 })
				if next = tool(t, h, "alice", sid, "pid", ""); next.status != http.StatusNotFound {
					t.Fatalf("after %s: %d %v, want 404", tc.tool, next.status, next.msgs)
				}
				waitFor(t, func() bool { return !alive(pid) })
				waitFor(t, func() bool { return h.b.Children() == 0 })
			}
			if tc.log != "" {
				waitFor(t, func() bool { return strings.Contains(h.log.String(), tc.log) })
			}
			for _, l := range strings.Split(h.log.String(), "\n") {
				if len(l) > maxStderrLine+1024 {
					t.Fatalf("a log line of %d bytes", len(l))
				}
			}
		})
	}
}

// TestAttackIgnoresSIGTERM: a child that ignores SIGTERM is killed after
// the grace when its session is deleted, and reaped.
func TestAttackIgnoresSIGTERM(t *testing.T) {
	h := newHostile(t, Config{StopGrace: 200 * time.Millisecond}, nil)
	sid := open(t, h, "alice")
	pid, _ := strconv.Atoi(tool(t, h, "alice", sid, "ignore_term", "").text())
	req, _ := http.NewRequest(http.MethodDelete, h.srv.URL, nil)
	req.Header.Set(userHeader, "alice")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || alive(pid) {
		t.Fatalf("delete: %d, pid %d alive %v; want it killed and reaped when DELETE returns", resp.StatusCode, pid, alive(pid))
	}
}

// TestAttackGrandchildHoldsStdout: a child that leaves a grandchild in
// a session of its own (out of its process group) holding its stdout,
// and exits, ends its session within the grace: the bridge does not wait
// for the grandchild. The grandchild is not stopped (docs/proxy.md,
// threat model).
func TestAttackGrandchildHoldsStdout(t *testing.T) {
	h := newHostile(t, Config{StopGrace: 200 * time.Millisecond}, nil)
	sid := open(t, h, "alice")
	gpid, err := strconv.Atoi(tool(t, h, "alice", sid, "grandchild", "").text())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(gpid, syscall.SIGKILL) })
	waitFor(t, func() bool { return h.b.Children() == 0 })
	if a := tool(t, h, "alice", sid, "pid", ""); a.status != http.StatusNotFound {
		t.Fatalf("after the child exited: %d, want 404", a.status)
	}
}

// TestAttackFlood: a child that floods notifications while no client
// reads keeps at most max_queued of them, and answers the call.
func TestAttackFlood(t *testing.T) {
	h := newHostile(t, Config{MaxQueued: 8}, nil)
	sid := open(t, h, "alice")
	// No GET stream and no reader of the request's stream: a JSON answer.
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(toolBody("1", "flood", `{"n":5000}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(userHeader, "alice")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, resp); a.text() != "flooded" || len(a.msgs) != 1 {
		t.Fatalf("flood: %d %v", a.status, a.msgs)
	}
	// Then with no request in flight: queued for the next GET stream.
	if a := tool(t, h, "alice", sid, "flood", `{"n":5000}`); a.text() != "flooded" {
		t.Fatalf("flood: %d %d messages", a.status, len(a.msgs))
	}
	s, _ := h.b.lookup(sid)
	s.mu.Lock()
	n := len(s.queue)
	s.mu.Unlock()
	if n > 8 {
		t.Fatalf("%d messages queued, want at most max_queued 8", n)
	}
}

// TestAttackFDs: sessions opened and ended leave no file descriptor of
// the proxy open.
func TestAttackFDs(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	h := newHostile(t, Config{StopGrace: 200 * time.Millisecond}, nil)
	count := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	cycle := func() {
		sid := open(t, h, "alice")
		tool(t, h, "alice", sid, "pid", "")
		req, _ := http.NewRequest(http.MethodDelete, h.srv.URL, nil)
		req.Header.Set(userHeader, "alice")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cycle() // warm: the client's keep-alive connection
	http.DefaultClient.CloseIdleConnections()
	before := count()
	for range 8 {
		cycle()
	}
	http.DefaultClient.CloseIdleConnections()
	h.srv.CloseClientConnections()
	waitFor(t, func() bool { return count() <= before })
}

// TestAttackNULInIdentity: a user field holding a NUL cannot reach a
// child's environment as it is (an environment string ends at NUL), and
// removing it would give the child another user's name ("adm\x00in" as
// "admin"): such a user gets 403, no child.
func TestAttackNULInIdentity(t *testing.T) {
	users := map[string]User{
		"admin": {Key: "u-admin", Issuer: "https://as.example", Subject: "admin"},
		"nul":   {Key: "u-nul", Issuer: "https://as.example", Subject: "adm\x00in"},
		"nulc":  {Key: "u-nulc", Issuer: "https://as.example", Subject: "x", Client: "c\x00"},
		"nulst": {Key: "u-nult", Issuer: "https://as.example", Subject: "y", Tenant: "\x00"},
		"nuli":  {Key: "u-nuli", Issuer: "https://as.example\x00", Subject: "z"},
	}
	h := newHostile(t, Config{}, users)
	sid := open(t, h, "admin")
	if got := tool(t, h, "admin", sid, "env", "").text(); got != `"admin"` {
		t.Fatalf("admin's child: subject %s", got)
	}
	for _, u := range []string{"nul", "nulc", "nulst", "nuli"} {
		a := post(t, h, u, "", initBody)
		if a.status != http.StatusForbidden {
			sid := a.header.Get("Mcp-Session-Id")
			t.Fatalf("%s: initialize %d, want 403 (its child sees subject %s)", u, a.status, tool(t, h, u, sid, "env", "").text())
		}
	}
	if n := h.b.Children(); n != 1 {
		t.Fatalf("children = %d, want 1", n)
	}
}

// TestAttackDirSymlink: a symbolic link placed in the base (by an
// operator, a backup restore, another child) that makes one user's
// directory another's is refused: the child is not started in it.
func TestAttackDirSymlink(t *testing.T) {
	base := t.TempDir()
	h := newHostile(t, Config{Dir: base + "/{tenant}/{subject}"}, nil)
	sid := open(t, h, "alice")
	aliceDir := tool(t, h, "alice", sid, "cwd", "").text()
	if aliceDir != base+"/t1/alice" {
		t.Fatalf("alice's cwd %q", aliceDir)
	}
	for _, target := range []string{"alice", aliceDir} {
		_ = os.Remove(base + "/t1/bob")
		if err := os.Symlink(target, base+"/t1/bob"); err != nil {
			t.Fatal(err)
		}
		a := post(t, h, "bob", "", initBody)
		if a.status == http.StatusOK {
			t.Fatalf("bob's initialize through a link to %s: 200, his child's cwd %q, want no child", target,
				tool(t, h, "bob", a.header.Get("Mcp-Session-Id"), "cwd", "").text())
		}
		if a.status != http.StatusBadGateway {
			t.Fatalf("bob: %d %v, want 502", a.status, a.msgs)
		}
	}
	// A link above the user's directory is refused as well.
	if err := os.Symlink(base+"/t1", base+"/t2"); err != nil {
		t.Fatal(err)
	}
	users := map[string]User{"mallory": {Key: "u-m", Issuer: "https://as.example", Subject: "alice", Tenant: "t2"}}
	h2 := newHostile(t, Config{Dir: base + "/{tenant}/{subject}"}, users)
	if a := post(t, h2, "mallory", "", initBody); a.status != http.StatusBadGateway {
		t.Fatalf("mallory through a tenant link: %d, want 502", a.status)
	}
}

// TestAttackDirShared: a dir template that gives two users one directory
// (clients acting for themselves have no subject, so {subject} is "~"
// for all of them; a template without {issuer} in front of two issuers)
// serves the directory to the first user only: the second is refused,
// logged, never started in it, also after a restart of the proxy.
func TestAttackDirShared(t *testing.T) {
	base := t.TempDir()
	users := map[string]User{
		"app1":   {Key: "c-app1", Issuer: "https://as.example", Tenant: "t1", Client: "app1"},
		"app2":   {Key: "c-app2", Issuer: "https://as.example", Tenant: "t1", Client: "app2"},
		"alice1": {Key: "u-alice-1", Issuer: "https://one.example", Subject: "alice", Tenant: "t1"},
		"alice2": {Key: "u-alice-2", Issuer: "https://two.example", Subject: "alice", Tenant: "t1"},
	}
	for i := range 2 { // the second round: a new bridge on the same base, as after a restart
		h := newHostile(t, Config{Dir: base + "/{tenant}/{subject}"}, users)
		for _, pair := range [][2]string{{"app1", "app2"}, {"alice1", "alice2"}} {
			sid := open(t, h, pair[0])
			dir := tool(t, h, pair[0], sid, "cwd", "").text()
			a := post(t, h, pair[1], "", initBody)
			if a.status == http.StatusOK {
				t.Fatalf("round %d: %s and %s: 200, cwd %q and %q; want one directory per user", i, pair[0], pair[1], dir,
					tool(t, h, pair[1], a.header.Get("Mcp-Session-Id"), "cwd", "").text())
			}
			if a.status != http.StatusBadGateway {
				t.Fatalf("%s: %d, want 502", pair[1], a.status)
			}
		}
		if !strings.Contains(h.log.String(), "belongs to another user") {
			t.Fatalf("log: %s", h.log.String())
		}
	}
}

// TestAttackViewsBounded: with PerUser, one user opening sessions
// without end (initialize, never DELETE) keeps at most max_queued of them
// on the child; the oldest ends (404), the newest work.
func TestAttackViewsBounded(t *testing.T) {
	h := newHostile(t, Config{PerUser: true, MaxQueued: 4}, nil)
	var sids []string
	for range 10 {
		a := post(t, h, "alice", "", initBody)
		if a.status != http.StatusOK {
			t.Fatalf("initialize: %d", a.status)
		}
		sids = append(sids, a.header.Get("Mcp-Session-Id"))
	}
	h.b.mu.Lock()
	n := len(h.b.views)
	h.b.mu.Unlock()
	if n > 4 {
		t.Fatalf("%d sessions on alice's child, want at most max_queued 4", n)
	}
	for i, sid := range sids {
		a := tool(t, h, "alice", sid, "pid", "")
		if want := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[i < 6]; a.status != want {
			t.Errorf("session %d: %d, want %d", i, a.status, want)
		}
	}
}

// childrenOf returns the processes whose parent is this test process:
// live ones and zombies (not reaped).
func childrenOf(t *testing.T) (live, zombies []int) {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != me {
			continue
		}
		if f[0] == "Z" {
			zombies = append(zombies, pid)
		} else {
			live = append(live, pid)
		}
	}
	return live, zombies
}

// TestAttackCloseWhileStarting: Close while users' children are being
// started leaves none running and none unreaped when it returns (this
// test process's children, counted in /proc).
func TestAttackCloseWhileStarting(t *testing.T) {
	users := map[string]User{}
	for i := range 2 {
		users["u"+strconv.Itoa(i)] = User{Key: "u" + strconv.Itoa(i), Subject: "s" + strconv.Itoa(i)}
	}
	for round := range 20 {
		h := newHostile(t, Config{StopGrace: 100 * time.Millisecond}, users)
		var wg sync.WaitGroup
		started := make(chan struct{}, len(users))
		for u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				started <- struct{}{}
				resp := rawPost(t, h.srv.URL, u, "", initBody)
				resp.Body.Close()
			}()
		}
		for range len(users) {
			<-started
		}
		// Close as a start is under way: the bridge has the request once
		// it counts a child (Children counts from the reservation).
		for deadline := time.Now().Add(10 * time.Second); h.b.Children() == 0 && round%2 == 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		_ = h.b.Close()
		live, zombies := childrenOf(t)
		if len(live)+len(zombies) > 0 {
			t.Fatalf("round %d: after Close, children %v running and %v not reaped", round, live, zombies)
		}
		wg.Wait()
	}
}

// TestAttackSharedChildClient: a child shared by a user's clients (per
// user, or stateless) was told the client of the request that started
// it, and serves the user's other clients as well (docs/proxy.md,
// Environment); another user's never.
func TestAttackSharedChildClient(t *testing.T) {
	users := map[string]User{
		"app1": {Key: "u-alice", Issuer: "https://as.example", Subject: "alice", Client: "app1"},
		"app2": {Key: "u-alice", Issuer: "https://as.example", Subject: "alice", Client: "app2"},
		"bob":  {Key: "u-bob", Issuer: "https://as.example", Subject: "bob", Client: "app2"},
	}
	h := newHostile(t, Config{PerUser: true}, users)
	s1, s2, s3 := open(t, h, "app1"), open(t, h, "app2"), open(t, h, "bob")
	for _, tc := range []struct{ user, sid, want string }{{"app1", s1, "app1"}, {"app2", s2, "app1"}, {"bob", s3, "app2"}} {
		if got := tool(t, h, tc.user, tc.sid, "client", "").text(); got != tc.want {
			t.Errorf("%s: the child was told client %q, want %q", tc.user, got, tc.want)
		}
	}
	if tool(t, h, "app2", s2, "pid", "").text() == tool(t, h, "bob", s3, "pid", "").text() {
		t.Fatal("bob reached alice's child")
	}
}

// TestAttackChildRequestFlood: a child that sends requests the bridge
// refuses itself (roots/list without forward_roots; any request of a
// stateless child) and does not read its stdin holds the bridge to one
// refusal at a time: no goroutine or buffer per request.
func TestAttackChildRequestFlood(t *testing.T) {
	h := newHostile(t, Config{RequestTimeout: 2 * time.Second, StopGrace: 100 * time.Millisecond}, nil)
	sid := open(t, h, "alice")
	base := runtime.NumGoroutine()
	done := make(chan answer, 1)
	go func() { done <- tool(t, h, "alice", sid, "flood_requests", `{"n":20000}`) }()
	peak := 0
	for {
		peak = max(peak, runtime.NumGoroutine()-base)
		if peak > 1000 {
			t.Fatalf("%d goroutines more than before the flood, want a bounded few", peak)
		}
		select {
		case a := <-done:
			if a.last() != `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Server process ended"}}` {
				t.Fatalf("flooding child's call: %v", a.msgs)
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
