package integration

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
)

// TestResumeOtherPrincipalMCPGo: a stateless mcp-go server with an event
// store, mounted with the middleware alone (no adapter, streaming on),
// keeps every principal's SSE answers under one empty session with event
// IDs counted from 1, and replays the rest of the stream an ID names to
// whoever sends it as Last-Event-ID. Bob, of another tenant, must not get
// alice's tools/call result by resuming from her event ID; alice resumes
// from her own.
func TestResumeOtherPrincipalMCPGo(t *testing.T) {
	t.Parallel()
	ms := mcpgoserver.NewMCPServer("resume", "0", mcpgoserver.WithToolCapabilities(true))
	ms.AddTool(mcpgomcp.NewTool("secret_job"), func(ctx context.Context, _ mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
		// A notification first, so that the answer is an event stream
		// whose first event comes before the result.
		_ = mcpgoserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
			map[string]any{"level": "info", "data": "working"})
		return mcpgomcp.NewToolResultText(secretText(ctx)), nil
	})
	e := newTaskEnv(t, func(m *middleware.Middleware) http.Handler {
		return m.Handler(mcpgoserver.NewStreamableHTTPServer(ms, mcpgoserver.WithStateLess(true),
			mcpgoserver.WithEventStore(mcpgoserver.NewInMemoryEventStore())))
	})
	alice := &taskCaller{e: e, rev: taskLegacy, token: e.iss.Token(t, authtest.Token{Subject: "alice", Tenant: "tenant-a", Scopes: []string{"mcp", "secret:read"}})}
	bob := &taskCaller{e: e, rev: taskLegacy, token: e.iss.Token(t, authtest.Token{Subject: "bob", Tenant: "tenant-b", Scopes: []string{"mcp"}})}
	alice.initialize(t)
	bob.initialize(t)
	a := alice.post(t, "tools/call", `"name":"secret_job","arguments":{}`)
	ids := regexp.MustCompile(`(?m)^id: ?(\S+)$`).FindAllStringSubmatch(a.body, -1)
	if a.status != http.StatusOK || len(ids) < 2 || !strings.Contains(a.body, "secret of alice/tenant-a") {
		t.Fatalf("alice's tools/call: %d %s (want an event stream of two events with IDs)", a.status, a.body)
	}
	first := ids[0][1]
	for _, tc := range []struct {
		name   string
		c      *taskCaller
		id     string
		status int
		want   string
	}{
		{"bob resumes from alice's event", bob, first, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"bob resumes from an ID never sent", bob, "999", http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"alice resumes from her event", alice, first, http.StatusOK, "secret of alice/tenant-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.c.resume(t, tc.id)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("GET with Last-Event-ID %s: %d %q, want %d with %q", tc.id, status, body, tc.status, tc.want)
			}
			if tc.c == bob && strings.Contains(body, "secret of alice") {
				t.Fatalf("bob got alice's result: %s", body)
			}
		})
	}
}

// resume sends a GET with Last-Event-ID id and returns its status and
// body (read until the server ends the stream, bounded by 5 s).
func (c *taskCaller) resume(t *testing.T, id string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.rev)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Last-Event-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // a context end after the replay ends the read
	return resp.StatusCode, string(b)
}
