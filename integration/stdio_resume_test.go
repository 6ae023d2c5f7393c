package integration

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/ssecut"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestStdioResumeEverything: the go-sdk client's call of the reference
// everything server's long-running tool (progress each second) through
// mcpguard proxy's stdio route survives the loss of its connection after
// the first progress: the client resumes with Last-Event-ID and gets the
// tool's result (before, the proxy cancelled the request in the child,
// which then never answered).
func TestStdioResumeEverything(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	resource, issuer := newStdioClientsEnv(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}, "get-env")
	e := &env{issuer: issuer, mcpURL: resource}
	ctx := testContext(t)
	cut := &ssecut.Cutter{Marker: `"name":"trigger-long-running-operation"`, Events: 2}
	cs, rec := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: "2025-11-25", base: cut, retries: 5})
	defer func() {
		if t.Failed() {
			for _, x := range rec.exchanges() {
				t.Logf("%s %s %d", x.method, x.mcpMethod, x.status)
			}
		}
	}()
	params := callParams("trigger-long-running-operation", map[string]any{"duration": 3, "steps": 3})
	params.SetProgressToken("long-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || !strings.Contains(toolText(res), "Long running operation completed") {
		t.Fatalf("long-running operation after its connection was cut: %v %+v", err, res)
	}
	select {
	case <-cut.Cut():
	default:
		t.Fatal("the call's connection was never cut")
	}
	if got := cut.Resumptions(); !slices.Contains(got, cut.LastEventID()) {
		t.Fatalf("resumptions with Last-Event-ID %q, want one from %q, the last event before the cut", got, cut.LastEventID())
	}
}
