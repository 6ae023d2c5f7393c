package proxy_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/internal/ssecut"
)

// TestStdioResume: the go-sdk client's call of a slow tool through the
// proxy to a stdio server survives the loss of its connection mid-call:
// the client resumes with Last-Event-ID and gets its result, and the
// child never saw a cancellation.
func TestStdioResume(t *testing.T) {
	e := stdioEnv(t, "")
	ctx := testContext(t)
	// The answer to the call of wait loses its connection after the
	// priming event and progress 1.
	rt := &ssecut.Cutter{Base: bearerRT{e.token(t, "alice", baseScope), nil}, Marker: `"name":"wait"`, Events: 2}
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource, HTTPClient: &http.Client{Transport: rt}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"n": 2}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, params)
		done <- result{res, err}
	}()
	select {
	case <-rt.Cut():
	case r := <-done:
		t.Fatalf("the call ended before its connection was cut: %+v", r)
	case <-ctx.Done():
		t.Fatal("no cut")
	}
	if got, err := toolText(ctx, cs, "release"); err != nil || got != `{"text":"ok"}` {
		t.Fatalf("release = %q, %v", got, err)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("no result after the cut")
	}
	if r.err != nil || r.res.IsError || r.res.Content[0].(*mcp.TextContent).Text != `{"text":"released"}` {
		t.Fatalf("wait after the cut: %+v, %v", r.res, r.err)
	}
	if got := rt.Resumptions(); !slices.Contains(got, rt.LastEventID()) {
		t.Errorf("resumptions with Last-Event-ID %q, want one from %q, the last event before the cut", got, rt.LastEventID())
	}
	if got, err := toolText(ctx, cs, "cancelled"); err != nil || got != `{"text":"0"}` {
		t.Errorf("cancelled = %q, %v: the child saw a cancellation", got, err)
	}
}
