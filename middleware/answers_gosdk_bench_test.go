package middleware

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkListAnswerGoSDK: tools/list of a go-sdk server (stateless,
// JSON answers) offering 1,000 tools, served unprotected ("unprotected")
// and through Middleware.Handler, filtered and annotated in annotate mode
// ("filtered"): the cost of the list layer against what a real server
// spends answering the same list (docs/performance.md).
func BenchmarkListAnswerGoSDK(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	tool := func(context.Context, *mcp.CallToolRequest, struct {
		Query string `json:"query" jsonschema:"what to look for"`
		Limit int    `json:"limit,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	for i := range 1000 {
		n := strconv.Itoa(i)
		mcp.AddTool(s, &mcp.Tool{Name: "tool_" + n, Description: "Tool number " + n + " does something useful with its arguments."}, tool)
	}
	srv := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	m := newFake(b, fakeValidator{claims: fakeClaims("mcp")}, func(c *Config) {
		c.Operations.Tools = map[string][]string{"tool_7": {"admin"}}
	})
	reqBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"unprotected", srv}, {"filtered", m.Handler(srv)}} {
		r := rpcRequest(legacyRev, "tools/list", "", "x")
		r.Header.Set("Accept", "application/json, text/event-stream")
		body := &rewindBody{}
		r.Body = body
		r.ContentLength = int64(len(reqBody))
		var out int
		dw := &countingWriter{h: http.Header{}, n: &out}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := dpopCPUTime() // process CPU time: the machine may be shared
			for b.Loop() {
				body.Reset(reqBody)
				clear(dw.h)
				out = 0
				rr := *r // the go-sdk replaces the request's Body
				c.h.ServeHTTP(dw, &rr)
				if out < 100_000 {
					b.Fatalf("answer of %d bytes", out)
				}
			}
			reportCPU(b, start)
		})
	}
}
