// Package testserver is a stateful go-sdk MCP server on stdio for the
// tests of internal/stdiobridge and proxy: a test binary runs it from
// TestMain when the variable Env is set, and a bridge starts that binary.
package testserver

//lint:file-ignore SA1019 sampling is deprecated from 2026-07-28; 2025-11-25 servers still use it

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env names the variable that makes a test binary this server.
const Env = "STDIOBRIDGE_TEST_SERVER"

// InitDelayEnv, a duration, makes the server wait that long before it
// reads anything (a server slow to start: npx fetching its package).
const InitDelayEnv = "STDIOBRIDGE_INIT_DELAY"

type empty struct{}

type waitIn struct {
	N   int `json:"n,omitempty"`   // progress notifications after the release
	Pad int `json:"pad,omitempty"` // bytes of padding in each
}

type bigIn struct {
	N int `json:"n"` // bytes of text
}

type textOut struct {
	Text string `json:"text"`
}

// Main runs a stateful go-sdk stdio server: a counter per process,
// who its user is, and tools that crash, hang, write garbage, sample
// the client and report progress.
func Main() {
	if d, err := time.ParseDuration(os.Getenv(InitDelayEnv)); err == nil {
		time.Sleep(d)
	}
	var n atomic.Int64
	// A change of the client's roots makes it ask for them (a request of
	// the server not tied to a client request: the GET stream's).
	s := mcp.NewServer(&mcp.Implementation{Name: "counter", Version: "1"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(_ context.Context, r *mcp.RootsListChangedRequest) {
			go func() { _, _ = r.Session.ListRoots(context.Background(), nil) }()
		},
	})
	text := func(s string) (*mcp.CallToolResult, textOut, error) { return nil, textOut{Text: s}, nil }
	mcp.AddTool(s, &mcp.Tool{Name: "incr"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		return text(fmt.Sprint(n.Add(1)))
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		wd, _ := os.Getwd()
		var env []string
		for _, kv := range os.Environ() {
			env = append(env, strings.SplitN(kv, "=", 2)[0])
		}
		return text(fmt.Sprintf("sub=%s iss=%s tenant=%s client=%s cwd=%s env=%s", os.Getenv("MCPGUARD_USER_SUBJECT"), os.Getenv("MCPGUARD_USER_ISSUER"),
			os.Getenv("MCPGUARD_USER_TENANT"), os.Getenv("MCPGUARD_USER_CLIENT"), wd, strings.Join(env, ",")))
	})
	mcp.AddTool(s, &mcp.Tool{Name: "args"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		return text(fmt.Sprintf("args=%q DATA_FILE=%q PASSED=%q", os.Args[1:], os.Getenv("DATA_FILE"), os.Getenv("STDIOBRIDGE_PASSED")))
	})
	mcp.AddTool(s, &mcp.Tool{Name: "admin_only"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		return text("admin:" + os.Getenv("MCPGUARD_USER_SUBJECT"))
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		os.Exit(3)
		return text("")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		fmt.Fprintln(os.Stdout, "this is not JSON-RPC")
		time.Sleep(time.Hour)
		return text("")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		fmt.Fprintln(os.Stderr, "hanging")
		select {} // ignores cancellation
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, textOut{}, err
		}
		return text("sampled:" + res.Content.(*mcp.TextContent).Text)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		tok := r.Params.GetProgressToken()
		for i := range 3 {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 3})
		}
		return text("done")
	})
	// wait reports progress 1, then waits for a release (or its
	// cancellation, which cancelled counts), then reports progress 2 to
	// 1+n (n from its arguments) and answers "released".
	release := make(chan struct{}, 64)
	var cancelled atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "wait"}, func(ctx context.Context, r *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, textOut, error) {
		tok := r.Params.GetProgressToken()
		notify := func(p int) {
			if tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(p), Message: strings.Repeat("x", in.Pad)})
			}
		}
		notify(1)
		select {
		case <-release:
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, textOut{}, ctx.Err()
		}
		for i := range max(in.N, 1) {
			notify(2 + i)
		}
		return text("released")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "release"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		release <- struct{}{}
		return text("ok")
	})
	// big answers n bytes of text (twice in the answer: as content and
	// as structured content).
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(ctx context.Context, r *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, textOut, error) {
		return text(strings.Repeat("x", in.N))
	})
	mcp.AddTool(s, &mcp.Tool{Name: "cancelled"}, func(ctx context.Context, r *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, textOut, error) {
		return text(fmt.Sprint(cancelled.Load()))
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
