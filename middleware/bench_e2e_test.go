package middleware

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEndToEndGoSDK is a go-sdk stateless server answering a
// tools/call over loopback TCP, unprotected (plain) and behind Handler
// (guarded), with the same client, token and body: the whole cost a user
// sees, HTTP and the SDK included. Compare the two with benchstat;
// cpu-ns/op is the process CPU time per call (client and server share the
// process, as they share the machine in a deployment on one host).
func BenchmarkEndToEndGoSDK(b *testing.B) {
	env := newBenchEnv(b)
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "get_weather"}, func(context.Context, *mcp.CallToolRequest, struct {
		Location string `json:"location"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	m, err := New(testConfig(env.validator(b, 0), env.iss))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(rpcBody(oldRevForBench, "tools/call", "get_weather"))
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"plain", sdk}, {"guarded", m.Handler(sdk)}} {
		ts := httptest.NewServer(c.h)
		client := ts.Client()
		client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := dpopCPUTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("Accept", "application/json, text/event-stream")
					r.Header.Set("MCP-Protocol-Version", oldRevForBench)
					r.Header.Set("Authorization", "Bearer "+env.token)
					resp, err := client.Do(r)
					if err != nil {
						b.Error(err)
						return
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("sunny")) {
						b.Errorf("status %d: %s", resp.StatusCode, got)
						return
					}
				}
			})
			reportCPU(b, start)
		})
		ts.Close()
	}
}

const oldRevForBench = "2025-11-25"
