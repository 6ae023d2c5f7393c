package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
)

// TestCancelOtherPrincipalMCPGo: mcp-go finds the request a
// notifications/cancelled names by session ID and JSON-RPC id, and a
// request without a session (stateless, or any 2026-07-28 request) has
// the session ID "" for every principal. Bob, of another tenant, must
// not cancel alice's in-flight tools/call by naming its id; alice still
// cancels her own.
func TestCancelOtherPrincipalMCPGo(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name    string
		rev     string
		handler func(t *testing.T, m *middleware.Middleware, ms *mcpgoserver.MCPServer) http.Handler
	}{
		{"stateless, no adapter", taskLegacy, mcpgoStateless},
		{"stateless, no adapter", taskModern, mcpgoStateless},
		{"default, no adapter", taskModern, func(_ *testing.T, m *middleware.Middleware, ms *mcpgoserver.MCPServer) http.Handler {
			return m.Handler(mcpgoserver.NewStreamableHTTPServer(ms))
		}},
		{"default, no adapter", taskLegacy, func(_ *testing.T, m *middleware.Middleware, ms *mcpgoserver.MCPServer) http.Handler {
			return m.Handler(mcpgoserver.NewStreamableHTTPServer(ms))
		}},
		{"adapter, stateless", taskLegacy, func(t *testing.T, m *middleware.Middleware, ms *mcpgoserver.MCPServer) http.Handler {
			a, err := mcpgo.New(mcpgo.Config{Middleware: m, Stateless: true})
			if err != nil {
				t.Fatal(err)
			}
			return m.Handler(a.Bind(mcpgoserver.NewStreamableHTTPServer(ms, a.Options()...)))
		}},
	} {
		t.Run(mode.name+" "+mode.rev, func(t *testing.T) {
			t.Parallel()
			started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
			ms := mcpgoserver.NewMCPServer("cancel", "0", mcpgoserver.WithToolCapabilities(true))
			ms.AddTool(mcpgomcp.NewTool("secret_job"), func(ctx context.Context, _ mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					cancelled <- struct{}{}
					return nil, ctx.Err()
				case <-time.After(10 * time.Second):
				}
				return mcpgomcp.NewToolResultText(secretText(ctx)), nil
			})
			e := newTaskEnv(t, func(m *middleware.Middleware) http.Handler { return mode.handler(t, m, ms) })
			alice := &taskCaller{e: e, rev: mode.rev, token: e.iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp", "secret:read"}})}
			bob := &taskCaller{e: e, rev: mode.rev, token: e.iss.Token(t, authtest.Token{Subject: "bob", Tenant: "tenant-b", Scopes: []string{"mcp"}})}
			alice.initialize(t)
			bob.initialize(t)
			done := make(chan *taskAnswer, 1)
			go func() { done <- alice.post(t, "tools/call", `"name":"secret_job","arguments":{}`) }()
			select {
			case <-started:
			case a := <-done:
				t.Fatalf("alice's call ended before it started: %d %s", a.status, a.body)
			case <-time.After(5 * time.Second):
				t.Fatal("alice's call did not start within 5s")
			}
			id := alice.n
			// Bob names alice's request id: as a number, and as the
			// string mcp-go formats it to.
			for _, rid := range []string{fmt.Sprint(id), fmt.Sprintf("%q", fmt.Sprint(id)), fmt.Sprintf("%d.0", id)} {
				if a := bob.cancel(t, rid); a.status != http.StatusAccepted || a.body != "" {
					t.Errorf("bob's notifications/cancelled of %s: %d %q, want 202 and no body", rid, a.status, a.body)
				}
			}
			select {
			case <-cancelled:
				t.Fatalf("bob's notifications/cancelled ended alice's tools/call: %s", (<-done).body)
			case a := <-done:
				t.Fatalf("alice's call ended: %d %s", a.status, a.body)
			case <-time.After(300 * time.Millisecond):
			}
			// Alice cancels her own request.
			if a := alice.cancel(t, fmt.Sprint(id)); a.status != http.StatusAccepted {
				t.Errorf("alice's notifications/cancelled: %d %s", a.status, a.body)
			}
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("alice's own notifications/cancelled did not reach mcp-go within 5s")
			}
			if a := <-done; strings.Contains(a.body, "secret of") {
				t.Errorf("alice's cancelled call answered %s", a.body)
			}
		})
	}
}

func mcpgoStateless(_ *testing.T, m *middleware.Middleware, ms *mcpgoserver.MCPServer) http.Handler {
	return m.Handler(mcpgoserver.NewStreamableHTTPServer(ms, mcpgoserver.WithStateLess(true)))
}

// cancel sends notifications/cancelled for the raw JSON-RPC id rid.
func (c *taskCaller) cancel(t *testing.T, rid string) *taskAnswer {
	t.Helper()
	meta := ""
	if c.rev == taskModern {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	}
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + rid + `,"reason":"stop"` + meta + `}}`
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
		req.Header.Set("Mcp-Method", "notifications/cancelled")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return &taskAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
