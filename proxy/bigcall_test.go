package proxy_test

import (
	"context"
	"io"
	"net/http"
	"slices"
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

// TestAnswerOverSizeBoundAfterResponse: a server that sends its response
// and then an event over the bound (a log, a misbehaving server) gives
// its client that one response, not a second one, the error of
// TestAnswerOverSizeBound, for the same request; a response over the
// bound after a notification still ends with the error. Raw SSE from a
// handler, read by the test.
func TestAnswerOverSizeBoundAfterResponse(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 5<<20) + `"}}`
	bigResult := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 5<<20) + `"}]}}`
	for _, tc := range []struct {
		name   string
		events []string
		want   []string
	}{
		{"response then oversize", []string{`{"jsonrpc":"2.0","id":7,"result":{}}`, big}, []string{`{"jsonrpc":"2.0","id":7,"result":{}}`}},
		{"error response then oversize", []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}`, big}, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}`}},
		{"log then oversize response", []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"x"}}`, bigResult},
			[]string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"x"}}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Response too large"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, envOptions{upstream: func(t *testing.T, _, _, _ string) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					for _, ev := range tc.events {
						_, _ = io.WriteString(w, "event: message\ndata: "+ev+"\n\n")
					}
				})
			}})
			resp := do(t, http.MethodPost, e.resource, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}`,
				http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}, "Mcp-Protocol-Version": {"2025-06-18"}})
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %v", resp.StatusCode, err)
			}
			var got []string
			for line := range strings.SplitSeq(string(body), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					got = append(got, d)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("messages %.300q, want %q", got, tc.want)
			}
		})
	}
}
