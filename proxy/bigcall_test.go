package proxy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnswerOverSizeBound: a server's response too large for one SSE
// event of the answer layer (4 MiB) reaches the go-sdk client through the
// proxy as the JSON-RPC error -32603 "Response too large" for its request
// (docs/answers.md, row 32), not as a stream that ends without a
// response, which left the client waiting until its own timeout; the
// session goes on. Stateful and stateless go-sdk servers, which answer
// over SSE.
func TestAnswerOverSizeBound(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := "stateful"
		if stateless {
			name = "stateless"
		}
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t, envOptions{upstream: func(t *testing.T, _, _, _ string) http.Handler {
				s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
				text := func(n int) mcp.ToolHandlerFor[struct{}, any] {
					return func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", n)}}}, nil, nil
					}
				}
				mcp.AddTool(s, &mcp.Tool{Name: "big"}, text(5<<20))
				mcp.AddTool(s, &mcp.Tool{Name: "small"}, text(10))
				return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
			}})
			ctx := testContext(t)
			cs := e.connect(ctx, t, e.token(t, "alice", baseScope), nil)
			// Bounded well below the test's context: before, the client
			// waited for a response that never came.
			callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "big"})
			if err == nil || !strings.Contains(err.Error(), "Response too large") {
				t.Fatalf("big: result %v, error %v; want the JSON-RPC error Response too large", res != nil, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "small"})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "xxxxxxxxxx" {
				t.Fatalf("small after big: %+v, %v", res, err)
			}
		})
	}
}
