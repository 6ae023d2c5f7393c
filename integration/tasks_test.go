package integration

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// Task isolation through real SDK servers (issue 21, item 4): alice of
// tenant-a runs the protected tool secret_job as a task; bob of tenant-b,
// with only the base scopes, must never list, read, poll or cancel it, nor
// receive its status notifications.

const (
	taskLegacy = "2025-11-25"
	taskModern = "2026-07-28"
)

type taskEnv struct {
	iss *authtest.Issuer
	url string
}

// newTaskEnv serves handler(m) on loopback behind a middleware whose
// policy protects secret_job with secret:read.
func newTaskEnv(t *testing.T, handler func(m *middleware.Middleware) http.Handler) *taskEnv {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences:   []string{resource},
		TenantClaim: "tenant",
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator: v,
		Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:    []string{"mcp"},
		Operations: middleware.OperationPolicy{
			Tools: map[string][]string{"secret_job": {"secret:read"}},
		},
		Now: iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler(m))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &taskEnv{iss: iss, url: resource}
}

// secretText is what secret_job answers: the subject and tenant of the
// principal whose request ran it.
func secretText(ctx context.Context) string {
	if p, ok := middleware.PrincipalFromContext(ctx); ok {
		return "secret of " + p.Subject + "/" + p.Tenant
	}
	return "secret of nobody"
}

// taskCaller is one principal's raw Streamable HTTP client.
type taskCaller struct {
	e     *taskEnv
	token string
	rev   string
	sid   string
	enc   string // Accept-Encoding, if set
	n     int
}

type taskAnswer struct {
	status int
	header http.Header
	body   string
	msgs   []map[string]any // the JSON-RPC messages (JSON body or SSE events)
}

func (c *taskCaller) post(t *testing.T, method, params string) *taskAnswer {
	t.Helper()
	c.n++
	if c.rev == taskModern {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
		if params == "" {
			params = meta
		} else {
			params += "," + meta
		}
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, c.n, method, params)
	if strings.HasPrefix(method, "notifications/") {
		body = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.e.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.rev)
	if c.rev == taskModern {
		req.Header.Set("Mcp-Method", method)
		if method == "tools/call" {
			req.Header.Set("Mcp-Name", "secret_job")
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.enc != "" {
		req.Header.Set("Accept-Encoding", c.enc)
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rd io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	b, _ := io.ReadAll(io.LimitReader(rd, 1<<20))
	a := &taskAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	var datas []string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(strings.ReplaceAll(a.body, "\r\n", "\n"), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				datas = append(datas, strings.TrimPrefix(d, " "))
			}
		}
	} else if len(b) > 0 {
		datas = []string{a.body}
	}
	for _, d := range datas {
		var m map[string]any
		if json.Unmarshal([]byte(d), &m) == nil {
			a.msgs = append(a.msgs, m)
		}
	}
	return a
}

// response returns the JSON-RPC response of the answer (the message with
// an id and no method).
func (a *taskAnswer) response() map[string]any {
	for _, m := range a.msgs {
		if _, ok := m["method"]; !ok {
			return m
		}
	}
	return nil
}

func (c *taskCaller) initialize(t *testing.T) {
	t.Helper()
	if c.rev == taskModern {
		return
	}
	a := c.post(t, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}`)
	if a.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", a.status, a.body)
	}
	c.sid = a.header.Get("Mcp-Session-Id")
	if c.sid != "" {
		if n := c.post(t, "notifications/initialized", ""); n.status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: %d %s", n.status, n.body)
		}
	}
}

// createTask calls secret_job as a task and returns the task ID ("" when
// the server ran it as a plain call).
func (c *taskCaller) createTask(t *testing.T) string {
	t.Helper()
	a := c.post(t, "tools/call", `"name":"secret_job","arguments":{},"task":{"ttl":60000}`)
	res, _ := a.response()["result"].(map[string]any)
	if a.status != http.StatusOK || res == nil {
		t.Fatalf("task-augmented tools/call: %d %s", a.status, a.body)
	}
	if task, ok := res["task"].(map[string]any); ok {
		id, _ := task["taskId"].(string)
		return id
	}
	return ""
}

// waitDone polls tasks/get until the task is terminal.
func (c *taskCaller) waitDone(t *testing.T, id string) {
	t.Helper()
	for range 1500 {
		a := c.post(t, "tasks/get", `"taskId":"`+id+`"`)
		res, _ := a.response()["result"].(map[string]any)
		if s, _ := res["status"].(string); s == "completed" || s == "failed" || s == "cancelled" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s did not complete", id)
}

func newMCPGoTaskServer() *mcpgoserver.MCPServer {
	ms := mcpgoserver.NewMCPServer("tasks", "0",
		mcpgoserver.WithTaskCapabilities(true, true, true), mcpgoserver.WithToolCapabilities(true))
	ms.AddTool(mcpgomcp.NewTool("secret_job", mcpgomcp.WithTaskSupport(mcpgomcp.TaskSupportOptional)),
		func(ctx context.Context, _ mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
			return mcpgomcp.NewToolResultText(secretText(ctx)), nil
		})
	return ms
}

// mcpgoModes are the ways to serve mcp-go behind mcpguard.
var mcpgoModes = []struct {
	name     string
	stateful bool
	handler  func(t *testing.T, m *middleware.Middleware) http.Handler
}{
	{"mcpgo adapter, stateful", true, func(t *testing.T, m *middleware.Middleware) http.Handler {
		a, err := mcpgo.New(mcpgo.Config{Middleware: m})
		if err != nil {
			t.Fatal(err)
		}
		return m.Handler(a.Bind(mcpgoserver.NewStreamableHTTPServer(newMCPGoTaskServer(), a.Options()...)))
	}},
	{"mcpgo adapter, stateless", false, func(t *testing.T, m *middleware.Middleware) http.Handler {
		a, err := mcpgo.New(mcpgo.Config{Middleware: m, Stateless: true})
		if err != nil {
			t.Fatal(err)
		}
		return m.Handler(a.Bind(mcpgoserver.NewStreamableHTTPServer(newMCPGoTaskServer(), a.Options()...)))
	}},
	{"mcp-go default, no adapter", true, func(_ *testing.T, m *middleware.Middleware) http.Handler {
		return m.Handler(mcpgoserver.NewStreamableHTTPServer(newMCPGoTaskServer()))
	}},
	{"mcp-go stateless, no adapter", false, func(_ *testing.T, m *middleware.Middleware) http.Handler {
		return m.Handler(mcpgoserver.NewStreamableHTTPServer(newMCPGoTaskServer(), mcpgoserver.WithStateLess(true)))
	}},
}

// TestTasksIsolatedMCPGo: through mcp-go in both modes, with and without
// the adapter. Alice creates one task with a 2025-11-25 request (in her
// session when stateful) and one with a 2026-07-28 request (no session:
// mcp-go keys it by the empty session ID, which every session may read);
// bob tries both with requests of both revisions.
func TestTasksIsolatedMCPGo(t *testing.T) {
	t.Parallel()
	for _, mode := range mcpgoModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			e := newTaskEnv(t, func(m *middleware.Middleware) http.Handler { return mode.handler(t, m) })
			tok := func(sub, tenant string, scopes ...string) string {
				return e.iss.Token(t, authtest.Token{Subject: sub, Tenant: tenant, Scopes: append([]string{}, scopes...)})
			}
			aliceL := &taskCaller{e: e, rev: taskLegacy, token: tok("alice", "tenant-a", "mcp", "secret:read")}
			aliceM := &taskCaller{e: e, rev: taskModern, token: aliceL.token}
			bobL := &taskCaller{e: e, rev: taskLegacy, token: tok("bob", "tenant-b", "mcp")}
			bobM := &taskCaller{e: e, rev: taskModern, token: bobL.token}
			aliceL.initialize(t)
			bobL.initialize(t)
			ids := []string{aliceL.createTask(t), aliceM.createTask(t)}
			for _, id := range ids {
				if id == "" {
					t.Fatal("mcp-go did not create a task")
				}
				aliceL.waitDone(t, id)
			}
			for _, bob := range []*taskCaller{bobL, bobM} {
				for _, id := range ids {
					// Bob lists no task of alice's.
					if a := bob.post(t, "tasks/list", ""); strings.Contains(a.body, id) {
						t.Errorf("bob's %s tasks/list shows alice's task: %d %s", bob.rev, a.status, a.body)
					}
					// Bob cannot read, poll or cancel it.
					for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
						a := bob.post(t, method, `"taskId":"`+id+`"`)
						errObj, _ := a.response()["error"].(map[string]any)
						if strings.Contains(a.body, "secret of") || errObj == nil || errObj["code"] != float64(taskRefusal(bob.rev, method)) {
							t.Errorf("bob's %s %s of alice's task: %d %s, want a %d error without the result", bob.rev, method, a.status, a.body, taskRefusal(bob.rev, method))
						}
					}
				}
			}
			// Bob's own stream carries no notification of alice's tasks
			// (mcp-go broadcasts them to every stateful session).
			if a := bobL.post(t, "ping", ""); strings.Contains(a.body, ids[0]) || strings.Contains(a.body, ids[1]) {
				t.Errorf("bob's stream carries alice's task notifications: %s", a.body)
			}
			// Alice's tasks are hers: listed, readable with her scopes.
			a := aliceL.post(t, "tasks/list", "")
			for _, id := range ids {
				if !strings.Contains(a.body, id) {
					t.Errorf("alice's tasks/list lacks her task %s: %d %s", id, a.status, a.body)
				}
				if a := aliceL.post(t, "tasks/result", `"taskId":"`+id+`"`); !strings.Contains(a.body, "secret of alice/tenant-a") {
					t.Errorf("alice's tasks/result: %d %s", a.status, a.body)
				}
			}
			// tasks/result needs what secret_job needed.
			down := *aliceL
			down.token = tok("alice", "tenant-a", "mcp")
			if a := down.post(t, "tasks/result", `"taskId":"`+ids[0]+`"`); a.status != http.StatusForbidden || strings.Contains(a.body, "secret of") ||
				!strings.Contains(a.header.Get("WWW-Authenticate"), `scope="mcp secret:read"`) {
				t.Errorf("tasks/result without secret:read: %d %q %s", a.status, a.header.Get("WWW-Authenticate"), a.body)
			}
		})
	}
}

// TestTasksGoSDK: the go-sdk v1.8.0 implements no tasks (a task-augmented
// tools/call is answered as a plain call, and tasks/* are unknown
// methods). Through it, in both modes, with and without the adapter, the
// binding is transparent (alice's calls, SSE answers included, work as
// before) and a task operation of bob's never reaches the server: the
// middleware answers it as for an unknown task.
func TestTasksGoSDK(t *testing.T) {
	t.Parallel()
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "secret_job"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			text := "secret of nobody"
			if p, ok := gosdk.Principal(req); ok {
				text = "secret of " + p.Subject + "/" + p.Tenant
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
		return s
	}
	for _, mode := range []struct {
		name      string
		stateless bool
		adapter   bool
	}{{"adapter, stateful", false, true}, {"adapter, stateless", true, true}, {"default handler, no adapter", false, false}, {"stateless, no adapter", true, false}} {
		for _, rev := range []string{taskLegacy, taskModern} {
			if rev == taskModern && !mode.stateless {
				continue // the go-sdk serves 2026-07-28 statelessly only
			}
			t.Run(mode.name+" "+rev, func(t *testing.T) {
				t.Parallel()
				e := newTaskEnv(t, func(m *middleware.Middleware) http.Handler {
					s := newServer()
					h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: mode.stateless})
					if !mode.adapter {
						return m.Handler(h)
					}
					a, err := gosdk.New(gosdk.Config{Middleware: m})
					if err != nil {
						t.Fatal(err)
					}
					return a.Handler(h)
				})
				alice := &taskCaller{e: e, rev: rev, token: e.iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp", "secret:read"}})}
				bob := &taskCaller{e: e, rev: rev, token: e.iss.Token(t, authtest.Token{Subject: "bob", Tenant: "tenant-b", Scopes: []string{"mcp"}})}
				alice.initialize(t)
				bob.initialize(t)
				a := alice.post(t, "tools/call", `"name":"secret_job","arguments":{},"task":{"ttl":60000}`)
				if !strings.Contains(a.body, "secret of") || a.status != http.StatusOK {
					t.Fatalf("alice's task-augmented call: %d %s", a.status, a.body)
				}
				if id := alice.createTask(t); id != "" {
					t.Fatalf("the go-sdk created task %s", id)
				}
				for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
					a := bob.post(t, method, `"taskId":"any-task"`)
					errObj, _ := a.response()["error"].(map[string]any)
					if code := taskRefusal(rev, method); code == -32601 {
						if a.status != http.StatusNotFound || errObj == nil || errObj["code"] != float64(code) {
							t.Errorf("bob's %s: %d %s, want the middleware's 404 -32601 (removed in 2026-07-28)", method, a.status, a.body)
						}
					} else if errObj == nil || errObj["code"] != float64(-32602) || errObj["message"] != "Task not found" {
						t.Errorf("bob's %s: %d %s, want the middleware's -32602 Task not found", method, a.status, a.body)
					}
				}
			})
		}
	}
}

// taskRefusal is the JSON-RPC code the middleware answers another
// principal's task operation with: -32602 "Task not found", but -32601
// "Method not found" for a 2026-07-28 tasks/result, which the tasks
// extension removed (docs/answers.md row 27).
func taskRefusal(rev, method string) int {
	if rev == taskModern && method == "tasks/result" {
		return -32601
	}
	return -32602
}
