package middleware

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEndToEndGoSDK is a go-sdk stateless server (JSON answers)
// answering a tools/call over loopback TCP, unprotected (plain) and
// behind Handler (guarded), with the same http.Client (keep-alive, which
// the benchmark checks), token and body: the whole cost a user sees, HTTP
// and the SDK included.
//
// server=both sends one request to each server in turn, round-robin,
// alternating which goes first, so that both meet the same machine load,
// and reports each one's process CPU time per request (client and server
// share the process, as they share the machine in a deployment on one
// host; on a CPU-bound machine throughput is the inverse of it), their
// ratio throughput-x-plain (plain CPU ÷ guarded CPU) and the difference
// added-cpu-ns/op. server=aa does the same with a second listener of the
// plain server in place of the guarded one: its ratio is the noise of the
// measure (1 when exact). server=plain and server=guarded send to one
// server only, for a CPU or allocation profile of each.
//
// The CPU time of a request is the process's over the request's wall
// time, so work the runtime does beside it (GC workers, the sweeper,
// spinning threads) is counted in whichever request it overlaps: with
// GOMAXPROCS=1 GOGC=off there is none. e2eMarkStart and e2eMarkEnd
// bound the measured loop for callgrind (docs/performance.md).
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
	names := []string{"plain", "guarded", "plain2"}
	var urls []string
	conns := make([]int, len(names))
	for i, h := range []http.Handler{sdk, m.Handler(sdk), sdk} {
		ts := httptest.NewUnstartedServer(h)
		ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns[i]++
			}
		}
		ts.Start()
		b.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	call := func(i int) error {
		r, _ := http.NewRequest(http.MethodPost, urls[i], bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", oldRevForBench)
		r.Header.Set("Authorization", "Bearer "+env.token)
		resp, err := client.Do(r)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("sunny"))) {
			err = fmt.Errorf("%s: status %d: %s", names[i], resp.StatusCode, got)
		}
		return err
	}
	for i := range names {
		if err := call(i); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		targets []int // the first is the baseline of the ratio
	}{{"both", []int{0, 1}}, {"aa", []int{0, 2}}, {"plain", []int{0}}, {"guarded", []int{1}}} {
		b.Run("server="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := make([]time.Duration, len(names))
			wall := make([][]time.Duration, len(names))
			c0 := slices.Clone(conns)
			order := slices.Clone(c.targets)
			e2eMarkStart()
			for b.Loop() {
				slices.Reverse(order)
				for _, i := range order {
					t0, u0 := time.Now(), dpopCPUTime()
					if err := call(i); err != nil {
						b.Fatal(err)
					}
					cpu[i] += dpopCPUTime() - u0
					wall[i] = append(wall[i], time.Since(t0))
				}
			}
			e2eMarkEnd()
			for _, i := range c.targets {
				// A request sent before the transport has put the last
				// one's connection back (it does so after the body's EOF)
				// may dial: rare, but keep-alive lost would be every time.
				if n := conns[i] - c0[i]; n > b.N/100 {
					b.Fatalf("%s: %d new connections in %d requests: keep-alive lost", names[i], n, b.N)
				}
				b.ReportMetric(float64(cpu[i].Nanoseconds())/float64(b.N), names[i]+"-cpu-ns/op")
				slices.Sort(wall[i])
				b.ReportMetric(float64(wall[i][len(wall[i])/2].Nanoseconds()), names[i]+"-p50-ns")
			}
			if t := c.targets; len(t) == 2 {
				b.ReportMetric(float64(cpu[t[0]])/float64(cpu[t[1]]), "throughput-x-plain")
				b.ReportMetric(float64((cpu[t[1]]-cpu[t[0]]).Nanoseconds())/float64(b.N), "added-cpu-ns/op")
			}
		})
	}
}

const oldRevForBench = "2025-11-25"

// e2eMarkStart and e2eMarkEnd are called just before and after
// BenchmarkEndToEndGoSDK's measured loop, so that callgrind can count its
// instructions alone (--zero-before and --dump-before).
//
//go:noinline
func e2eMarkStart() {}

//go:noinline
func e2eMarkEnd() {}
