package proxycmd

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/internal/stdiobridge/testserver"
)

func TestMain(m *testing.M) {
	if os.Getenv(testserver.Env) != "" {
		testserver.Main() // this test binary as a stdio MCP server
		return
	}
	os.Exit(m.Run())
}

// TestStdioFlags: "mcpguard proxy -dev-as ... -- command args" runs the
// command per session behind the whole decision; a tool call with a
// development token reaches it; the command ends cleanly.
func TestStdioFlags(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-upstream", "http://127.0.0.1:1/mcp", "--", exe}, "replaces -upstream"},
		{[]string{"-dev-as", "127.0.0.1:1", exe}, "goes after --"},
	} {
		if _, err := parseFlags(tc.args, &syncBuf{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
	addr, devAddr := freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-dev-as", devAddr, "-scopes", "mcp:tools", "--", "env", testserver.Env + "=1", exe}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuf
	startedc := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, func(string) string { return "" }, &syncBuf{}, &stderr, func(s started) { startedc <- s })
	}()
	var st started
	select {
	case st = <-startedc:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not started")
	}
	tok, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: st.Resource, HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "sub=alice") {
		t.Fatalf("CallTool = %v, %v\n%s", res, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stdio") {
		t.Errorf("banner does not name the stdio upstream:\n%s", stderr.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no shutdown")
	}
}
