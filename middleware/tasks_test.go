package middleware

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// naiveTasks is an MCP server that implements tasks with no binding at
// all, as a server in another language behind a proxy might: every
// caller sees every task. Its answers are JSON, or SSE (with a
// notification of every task before the response) when the request has
// "X-Answer: sse". A GET is an SSE stream of a status notification per
// task (and a replayed tasks/list response), then ends.
type naiveTasks struct {
	mu     sync.Mutex
	tasks  []string          // IDs in creation order
	secret map[string]string // task ID -> result text
	hits   map[string]int    // method -> requests seen
	modern bool              // CreateTaskResult in the 2026-07-28 shape
}

func newNaive() *naiveTasks {
	return &naiveTasks{secret: map[string]string{}, hits: map[string]int{}}
}

func (s *naiveTasks) hit(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[method]
}

func (s *naiveTasks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := s.notifications()
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, n := range notes {
			fmt.Fprintf(w, "id: g%d\ndata: %s\n\n", i, n)
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "id: replay\ndata: %s\n\n", s.listResponse("9"))
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string          `json:"name"`
			TaskID string          `json:"taskId"`
			Task   json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	s.hits[req.Method]++
	var resp string
	switch req.Method {
	case "tools/call":
		sub := "-"
		if p, ok := PrincipalFromContext(r.Context()); ok {
			sub = p.Subject + "/" + p.Tenant
		}
		if req.Params.Task == nil && !s.modern {
			resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, req.ID)
			break
		}
		id := fmt.Sprintf("task-%d", len(s.tasks)+1)
		s.tasks = append(s.tasks, id)
		s.secret[id] = "secret of " + sub
		if s.modern {
			resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"task","taskId":%q,"status":"working","ttlMs":60000}}`, req.ID, id)
		} else {
			resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"task":{"taskId":%q,"status":"working","ttl":null}}}`, req.ID, id)
		}
	case "tasks/list":
		resp = s.listResponse(string(req.ID))
	case "tasks/get", "tasks/cancel", "tasks/update":
		resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"taskId":%q,"status":"completed","result":{"content":[{"type":"text","text":%q}]}}}`, req.ID, req.Params.TaskID, s.secret[req.Params.TaskID])
	case "tasks/result":
		resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, req.ID, s.secret[req.Params.TaskID])
	default:
		resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)
	}
	if r.Header.Get("X-Answer") == "sse" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, n := range notes {
			fmt.Fprintf(w, "data: %s\n\n", n)
		}
		fmt.Fprintf(w, "event: message\r\ndata: %s\r\n\r\n", resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, resp)
}

func (s *naiveTasks) notifications() []string {
	var out []string
	for _, id := range s.tasks {
		method := "notifications/tasks/status"
		if s.modern {
			method = "notifications/tasks"
		}
		out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{"taskId":%q,"status":"completed","result":{"content":[{"type":"text","text":%q}]}}}`, method, id, s.secret[id]))
	}
	return out
}

func (s *naiveTasks) listResponse(id string) string {
	var ts []string
	for _, t := range s.tasks {
		ts = append(ts, fmt.Sprintf(`{"taskId":%q,"status":"working"}`, t))
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tasks":[%s],"nextCursor":"c"}}`, id, strings.Join(ts, ","))
}

// taskClient sends one principal's requests through the middleware.
type taskClient struct {
	h     http.Handler
	token string
	rev   string
	sid   string
	sse   bool
}

func (c taskClient) post(t *testing.T, method, params string) *httptest.ResponseRecorder {
	t.Helper()
	if c.rev == modernRev {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
		if params == "" {
			params = meta
		} else {
			params += "," + meta
		}
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":{%s}}`, "r-"+method, method, params)
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", c.rev)
	if c.rev == modernRev {
		r.Header.Set("Mcp-Method", method)
		if method == "tools/call" {
			r.Header.Set("Mcp-Name", "get_weather")
		}
	}
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.sid != "" {
		r.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.sse {
		r.Header.Set("X-Answer", "sse")
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w
}

// create calls get_weather as a task and returns the task ID.
func (c taskClient) create(t *testing.T) string {
	t.Helper()
	params := `"name":"get_weather","arguments":{},"task":{"ttl":60000}`
	if c.rev == modernRev {
		params = `"name":"get_weather","arguments":{}`
	}
	w := c.post(t, "tools/call", params)
	body := w.Body.String()
	i := strings.Index(body, `"taskId":"`)
	if w.Code != http.StatusOK || i < 0 {
		t.Fatalf("create: %d %s", w.Code, body)
	}
	id, _, _ := strings.Cut(body[i+len(`"taskId":"`):], `"`)
	return id
}

func taskFixture(t *testing.T, modern bool) (*fixture, *naiveTasks, http.Handler) {
	t.Helper()
	f := newFixture(t, nil)
	s := newNaive()
	s.modern = modern
	return f, s, f.m.Handler(s)
}

func (f *fixture) principal(t *testing.T, sub, tenant string, scopes ...string) string {
	t.Helper()
	return f.iss.Token(t, authtest.Token{Subject: sub, Tenant: tenant, Scopes: append([]string{}, scopes...)})
}

// TestTasksArePrincipals: with a server that binds nothing, alice's
// tasks are never listed, read, polled or cancelled by bob (another
// tenant, base scopes for tasks), in JSON and SSE answers and both
// revisions; bob's requests for them never reach the server.
func TestTasksArePrincipals(t *testing.T) {
	for _, rev := range []string{legacyRev, modernRev} {
		for _, sse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s sse=%v", rev, sse), func(t *testing.T) {
				f, s, h := taskFixture(t, rev == modernRev)
				all := []string{"mcp", "tools:call", "weather:read"}
				alice := taskClient{h: h, token: f.principal(t, "alice", "tenant-a", all...), rev: rev, sse: sse}
				bob := taskClient{h: h, token: f.principal(t, "bob", "tenant-b", all...), rev: rev, sse: sse}
				bobBase := taskClient{h: h, token: f.principal(t, "bob", "tenant-b", "mcp", "tools:call"), rev: rev, sse: sse}
				a1, b1 := alice.create(t), bob.create(t)
				a2 := alice.create(t)

				for _, c := range []struct {
					who  taskClient
					want []string
					not  []string
				}{{alice, []string{a1, a2}, []string{b1}}, {bob, []string{b1}, []string{a1, a2}}} {
					w := c.who.post(t, "tasks/list", "")
					body := w.Body.String()
					if w.Code != http.StatusOK {
						t.Fatalf("tasks/list: %d %s", w.Code, body)
					}
					for _, id := range c.want {
						if !strings.Contains(body, `"`+id+`"`) {
							t.Errorf("tasks/list lacks own %s: %s", id, body)
						}
					}
					for _, id := range c.not {
						if strings.Contains(body, `"`+id+`"`) {
							t.Errorf("tasks/list shows another principal's %s: %s", id, body)
						}
					}
					if !strings.Contains(body, `"nextCursor":"c"`) {
						t.Errorf("tasks/list lost its other members: %s", body)
					}
				}

				wantStatus := http.StatusOK
				if rev == modernRev {
					wantStatus = http.StatusBadRequest
				}
				for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"} {
					status, want := wantStatus, `{"jsonrpc":"2.0","id":"r-`+method+`","error":{"code":-32602,"message":"Task not found"}}`
					removed := rev == modernRev && method == "tasks/result" // SEP-2663 removed it
					if removed {
						status, want = http.StatusNotFound, `{"jsonrpc":"2.0","id":"r-tasks/result","error":{"code":-32601,"message":"Method not found"}}`
					}
					for _, who := range []taskClient{bob, bobBase} {
						before := s.hit(method)
						w := who.post(t, method, `"taskId":"`+a1+`"`)
						if w.Code != status || w.Body.String() != want {
							t.Errorf("bob %s of alice's task: %d %s, want %d %s", method, w.Code, w.Body, status, want)
						}
						if s.hit(method) != before {
							t.Errorf("bob's %s reached the server", method)
						}
					}
					if removed {
						if w := alice.post(t, method, `"taskId":"`+a1+`"`); w.Code != status || w.Body.String() != want {
							t.Errorf("alice %s of her task: %d %s, want %d %s", method, w.Code, w.Body, status, want)
						}
						continue
					}
					if w := alice.post(t, method, `"taskId":"`+a1+`"`); w.Code != http.StatusOK || (method == "tasks/result" && !strings.Contains(w.Body.String(), "secret of alice/tenant-a")) {
						t.Errorf("alice %s of her task: %d %s", method, w.Code, w.Body)
					}
				}
				// Unknown and missing task IDs get the same answer.
				for _, params := range []string{`"taskId":"task-999"`, `"taskId":7`, ``} {
					if w := alice.post(t, "tasks/get", params); w.Code != wantStatus || !strings.Contains(w.Body.String(), `"Task not found"`) {
						t.Errorf("tasks/get {%s}: %d %s", params, w.Code, w.Body)
					}
				}
			})
		}
	}
}

// TestTaskResultNeedsToolScopes: alice's task of get_weather
// (weather:read) cannot be read, polled or cancelled with a token of hers
// that lacks weather:read: 403 insufficient_scope naming every scope the
// request needs.
func TestTaskResultNeedsToolScopes(t *testing.T) {
	f, s, h := taskFixture(t, false)
	alice := taskClient{h: h, token: f.principal(t, "alice", "tenant-a", "mcp", "tools:call", "weather:read"), rev: legacyRev}
	id := alice.create(t)
	down := alice
	down.token = f.principal(t, "alice", "tenant-a", "mcp", "tools:call")
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		w := down.post(t, method, `"taskId":"`+id+`"`)
		wantHdr := `Bearer error="insufficient_scope", scope="mcp tools:call weather:read", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`
		if w.Code != http.StatusForbidden || w.Header().Get("WWW-Authenticate") != wantHdr || strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%s: %d %q %s, want 403 %q", method, w.Code, w.Header().Get("WWW-Authenticate"), w.Body, wantHdr)
		}
	}
	if s.hit("tasks/result") != 0 {
		t.Error("a refused tasks/result reached the server")
	}
	// tasks/list shows her own tasks whatever the token's scopes.
	if w := down.post(t, "tasks/list", ""); !strings.Contains(w.Body.String(), id) {
		t.Errorf("tasks/list with fewer scopes: %s", w.Body)
	}
}

// TestTaskNotificationsFiltered: a GET stream and a POST's SSE answer
// carry status notifications of every task (the server broadcasts them);
// each principal receives only its own, and a replayed tasks/list
// response on the stream is filtered too.
func TestTaskNotificationsFiltered(t *testing.T) {
	for _, modern := range []bool{false, true} {
		rev := legacyRev
		if modern {
			rev = modernRev
		}
		t.Run(rev, func(t *testing.T) {
			f, _, h := taskFixture(t, modern)
			all := []string{"mcp", "tools:call", "weather:read"}
			alice := taskClient{h: h, token: f.principal(t, "alice", "tenant-a", all...), rev: rev, sse: true}
			bob := taskClient{h: h, token: f.principal(t, "bob", "tenant-b", all...), rev: rev, sse: true}
			a1, b1 := alice.create(t), bob.create(t)
			// A POST answered with SSE: the server sent both notifications.
			w := bob.post(t, "ping", "")
			if body := w.Body.String(); strings.Contains(body, a1) || strings.Contains(body, "alice") || !strings.Contains(body, b1) {
				t.Errorf("bob's POST stream: %s", body)
			}
			r := httptest.NewRequest(http.MethodGet, resource, nil)
			r.Header.Set("Authorization", "Bearer "+bob.token)
			r.Header.Set("MCP-Protocol-Version", legacyRev)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.String()
			if strings.Contains(body, a1) || strings.Contains(body, "alice") || !strings.Contains(body, b1) {
				t.Errorf("bob's GET stream: %s", body)
			}
			// The dropped notification keeps its id, so Last-Event-ID stays right.
			if !strings.Contains(body, "id: g0\n\n") {
				t.Errorf("dropped event lost its id: %q", body)
			}
		})
	}
}

// TestTaskFloodKeepsOthers: one principal creating ten times the store's
// bound never evicts another principal's task.
func TestTaskFloodKeepsOthers(t *testing.T) {
	f, _, h := taskFixture(t, false)
	f.m.tasks = newMemoryOwnerStore(memoryOwnerConfig{Max: 20, PerOwner: 10, Now: f.m.cfg.Now})
	all := []string{"mcp", "tools:call", "weather:read"}
	alice := taskClient{h: h, token: f.principal(t, "alice", "tenant-a", all...), rev: legacyRev}
	bob := taskClient{h: h, token: f.principal(t, "bob", "tenant-b", all...), rev: legacyRev}
	a := alice.create(t)
	for range 200 {
		bob.create(t)
	}
	if w := alice.post(t, "tasks/result", `"taskId":"`+a+`"`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "secret of alice") {
		t.Errorf("alice's task after bob's flood: %d %s", w.Code, w.Body)
	}
}

// TestAnonymousTasks: a task created by a public tool belongs to the
// anonymous principal in that session: no token holder reaches it, a
// client without a token polls it, and a task of a token holder is "Task
// not found" without a token, as for another principal.
func TestAnonymousTasks(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Operations.Public = PublicOperations{Methods: []string{"initialize"}, Tools: []string{"hello"}}
		c.Operations.Methods = nil
		c.Operations.Tools = nil
		c.Operations.Prompts = nil
		c.Operations.Resources = nil
	})
	s := newNaive()
	h := f.m.Handler(s)
	anon := taskClient{h: h, rev: legacyRev}
	w := anon.post(t, "tools/call", `"name":"hello","arguments":{},"task":{}`)
	if !strings.Contains(w.Body.String(), "task-1") {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := anon.post(t, "tasks/get", `"taskId":"task-1"`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"task-1"`) {
		t.Errorf("tokenless tasks/get of its task: %d %s, want 200", w.Code, w.Body)
	}
	bob := taskClient{h: h, rev: modernRev, token: f.principal(t, "bob", "tenant-b", "mcp")}
	if w := bob.post(t, "tasks/get", `"taskId":"task-1"`); !strings.Contains(w.Body.String(), "Task not found") {
		t.Errorf("bob: %d %s", w.Code, w.Body)
	}
	if w := bob.post(t, "tasks/list", ""); strings.Contains(w.Body.String(), "task-1") {
		t.Errorf("bob lists it: %s", w.Body)
	}
	bobsTask := taskClient{h: h, rev: legacyRev, token: bob.token}.create(t)
	want := `{"jsonrpc":"2.0","id":"r-tasks/get","error":{"code":-32602,"message":"Task not found"}}`
	if w := anon.post(t, "tasks/get", `"taskId":"`+bobsTask+`"`); w.Code != http.StatusOK || w.Body.String() != want {
		t.Errorf("tokenless tasks/get of bob's task: %d %s, want 200 %s", w.Code, w.Body, want)
	}
	if n := s.hit("tasks/get"); n != 1 {
		t.Errorf("tasks/get reached the server %d times, want 1 (the anonymous task's)", n)
	}
}

// TestTasksAreTheUsers: a task belongs to the user whose request created
// it, whatever client the user acts through (docs/policy.md, "Tasks are
// the principal's"), as its sessions do: alice's second client (a client
// that registered anew at step-up) lists, polls, reads and cancels her
// task and receives its status notifications; bob, alice at another
// tenant, and a client acting for itself whose client_id is alice's
// first client's still get "Task not found". With
// SessionConfig.BindClient a task is bound to the user and its client
// again.
func TestTasksAreTheUsers(t *testing.T) {
	all := []string{"mcp", "tools:call", "weather:read"}
	for _, bind := range []bool{false, true} {
		t.Run(fmt.Sprintf("bind_client=%v", bind), func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.Sessions.BindClient = bind })
			s := newNaive()
			h := f.m.Handler(s)
			tok := func(sub, client, tenant string) taskClient {
				return taskClient{h: h, rev: legacyRev, sse: true, token: f.iss.Token(t, authtest.Token{Subject: sub, ClientID: client, Tenant: tenant, Scopes: all})}
			}
			first := tok("alice", "client-1", "tenant-a")
			second := tok("alice", "https://app.example/second", "tenant-a")
			id := first.create(t)
			want := `{"jsonrpc":"2.0","id":"r-tasks/get","error":{"code":-32602,"message":"Task not found"}}`
			for _, c := range []struct {
				name  string
				who   taskClient
				owner bool
			}{
				{"alice's first client", first, true},
				{"alice's second client", second, !bind},
				{"bob", tok("bob", "client-1", "tenant-a"), false},
				{"alice at tenant-b", tok("alice", "client-1", "tenant-b"), false},
				{"client-1 acting for itself", tok("client-1", "client-1", "tenant-a"), false},
			} {
				for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
					before := s.hit(method)
					w := c.who.post(t, method, `"taskId":"`+id+`"`)
					reached := s.hit(method) != before
					switch {
					case c.owner && (w.Code != http.StatusOK || !reached):
						t.Errorf("%s: %s of the task: %d %s, reached %v; want 200 from the server", c.name, method, w.Code, w.Body, reached)
					case !c.owner && (reached || w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"Task not found"`)):
						t.Errorf("%s: %s of alice's task: %d %s, reached %v; want 200 Task not found", c.name, method, w.Code, w.Body, reached)
					}
				}
				if !c.owner {
					if w := c.who.post(t, "tasks/get", `"taskId":"`+id+`"`); w.Body.String() != want {
						t.Errorf("%s: %s, want %s", c.name, w.Body, want)
					}
				}
				w := c.who.post(t, "tasks/list", "")
				if listed := strings.Contains(w.Body.String(), `"taskId":"`+id+`"`); listed != c.owner {
					t.Errorf("%s: tasks/list shows the task: %v, want %v: %s", c.name, listed, c.owner, w.Body)
				}
				// The POST's SSE answer carries the server's status
				// notification of every task.
				w = c.who.post(t, "ping", "")
				if got := strings.Contains(w.Body.String(), `"taskId":"`+id+`"`); got != c.owner {
					t.Errorf("%s: status notification of the task passed: %v, want %v: %s", c.name, got, c.owner, w.Body)
				}
			}
		})
	}
}

// TestTaskFloodManyClients: one user creating tasks through 100 client
// IDs (CIMD lets a client choose its client_id at will) shares one quota:
// it never fills the store for everyone. Bob's task survives the flood,
// and bob can still create and read a new one; alice keeps her own most
// recent tasks.
func TestTaskFloodManyClients(t *testing.T) {
	f, s, h := taskFixture(t, false)
	f.m.tasks = newMemoryOwnerStore(memoryOwnerConfig{Max: 40, PerOwner: 10, Now: f.m.cfg.Now})
	all := []string{"mcp", "tools:call", "weather:read"}
	bob := taskClient{h: h, token: f.principal(t, "bob", "tenant-b", all...), rev: legacyRev}
	b1 := bob.create(t)
	const clients = 100
	refused := 0
	var last taskClient
	for i := range clients * 4 {
		if i%4 == 0 {
			last = taskClient{h: h, rev: legacyRev, token: f.iss.Token(t, authtest.Token{Subject: "alice", ClientID: fmt.Sprintf("https://c%d.example/client", i/4), Tenant: "tenant-a", Scopes: all})}
		}
		w := last.post(t, "tools/call", `"name":"get_weather","arguments":{},"task":{"ttl":60000}`)
		if !strings.Contains(w.Body.String(), `"taskId"`) {
			refused++
		}
	}
	if refused != 0 {
		t.Errorf("alice's flood: %d of %d task creations refused, want 0 (her oldest tasks make room)", refused, clients*4)
	}
	if w := bob.post(t, "tasks/result", `"taskId":"`+b1+`"`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "secret of bob") {
		t.Errorf("bob's task after alice's flood: %d %s", w.Code, w.Body)
	}
	b2 := bob.create(t)
	if w := bob.post(t, "tasks/result", `"taskId":"`+b2+`"`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "secret of bob") {
		t.Errorf("bob's new task after alice's flood: %d %s", w.Code, w.Body)
	}
	// Alice's newest task, created by her last client, is hers from any.
	newest := fmt.Sprintf("task-%d", len(s.tasks)-1) // before b2
	first := taskClient{h: h, rev: legacyRev, token: f.principal(t, "alice", "tenant-a", all...)}
	if w := first.post(t, "tasks/result", `"taskId":"`+newest+`"`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "secret of alice") {
		t.Errorf("alice's newest task from her first client: %d %s", w.Code, w.Body)
	}
}
