package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// benchTargets are the three ways to reach the same upstream, measured in
// the same run: directly, through a plain httputil.ReverseProxy (the floor
// of any Go proxy), and through mcpguard proxy (the whole decision: token
// validation from the cache, body peek, policy, assertion from its cache,
// header stripping, the decision log line to a discarding handler).
type benchTargets struct {
	direct, plain, guarded string // MCP endpoint URLs
	token                  string
	px                     *proxy.Proxy
}

// benchUpstream serves a go-sdk stateless JSON tools/call at /mcp, and at
// /sse a GET event stream of 1000 events (or, with ?idle=1, one event and
// then nothing until the client leaves; with ?ids=1, each event carries an
// id line, "id: 1000" to "id: 1999", so that every event is 117 bytes).
func benchUpstream(b testing.TB) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	event := "data: " + strings.Repeat("x", 100) + "\n\n"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			sdk.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		f := w.(http.Flusher)
		if r.URL.Query().Get("idle") != "" {
			io.WriteString(w, event)
			f.Flush()
			<-r.Context().Done()
			return
		}
		ids := r.URL.Query().Get("ids") != ""
		for i := range 1000 {
			if ids {
				io.WriteString(w, "id: "+strconv.Itoa(1000+i)+"\n")
			}
			io.WriteString(w, event)
			f.Flush()
		}
	}))
	b.Cleanup(ts.Close)
	return ts
}

func newBenchTargets(b testing.TB, up *httptest.Server) *benchTargets {
	asTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	resource := "http://" + pxTS.Listener.Addr().String() + "/mcp"
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope}})
	if err != nil {
		b.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	b.Cleanup(asTS.Close)
	px, err := proxy.New(proxy.Config{
		Routes: []proxy.Route{{Resource: resource, Upstream: up.URL + "/mcp", Issuers: []string{issuer}, Scopes: []string{baseScope},
			Operations: proxy.Operations{Tools: map[string][]string{"echo": {baseScope}}}}},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	b.Cleanup(pxTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	target, _ := url.Parse(up.URL)
	plain := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1,
	})
	b.Cleanup(plain.Close)
	tok, err := as.IssueToken("bench", "acme", "bench-client", resource, []string{baseScope})
	if err != nil {
		b.Fatal(err)
	}
	return &benchTargets{direct: up.URL + "/mcp", plain: plain.URL + "/mcp", guarded: resource, token: tok, px: px}
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`

// call sends one tools/call and reads the whole answer.
func call(c *http.Client, u, token string) error {
	req, _ := http.NewRequest("POST", u, strings.NewReader(benchCall))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != 200 || n == 0) {
		err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
	}
	return err
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// compare runs op against each target in turn, round-robin, so that every
// target meets the same machine load (this machine's two cores are
// shared), and reports per target the p50 and p99 wall time and the CPU
// time of the whole process per op (client, proxy and upstream run here:
// on a CPU-bound machine throughput is the inverse of CPU per op), and
// the ratios of mcpguard proxy to the plain ReverseProxy.
func compare(b *testing.B, names []string, op func(target int) error) {
	type stats struct {
		wall []time.Duration
		cpu  time.Duration
	}
	st := make([]stats, len(names))
	for b.Loop() {
		for i := range names {
			t0, c0 := time.Now(), processCPU()
			if err := op(i); err != nil {
				b.Fatalf("%s: %v", names[i], err)
			}
			st[i].cpu += processCPU() - c0
			st[i].wall = append(st[i].wall, time.Since(t0))
		}
	}
	n := len(st[0].wall)
	p := func(i, q int) float64 {
		w := slices.Clone(st[i].wall)
		slices.Sort(w)
		return float64(w[len(w)*q/100].Nanoseconds()) / 1e3
	}
	cpu := func(i int) float64 { return float64(st[i].cpu.Nanoseconds()) / 1e3 / float64(n) }
	for i, name := range names {
		b.ReportMetric(p(i, 50), name+"-p50-µs")
		b.ReportMetric(p(i, 99), name+"-p99-µs")
		b.ReportMetric(cpu(i), name+"-cpu-µs/op")
	}
	// names are direct, plain, mcpguard.
	b.ReportMetric(p(2, 50)-p(1, 50), "added-p50-µs-vs-plain")
	b.ReportMetric(p(2, 99)-p(1, 99), "added-p99-µs-vs-plain")
	b.ReportMetric(p(2, 50)-p(0, 50), "added-p50-µs-vs-direct")
	b.ReportMetric(cpu(1)/cpu(2), "throughput-x-plain")
	b.ReportMetric(cpu(0)/cpu(2), "throughput-x-direct")
	b.ReportMetric(cpu(0)/cpu(1), "plain-throughput-x-direct")
	b.ReportMetric(0, "ns/op") // an op is one request to each target
}

// BenchmarkProxyToolsCall: a cached tools/call (the token validated from
// the cache, the assertion reused) to a go-sdk stateless JSON server,
// directly, through a plain ReverseProxy and through mcpguard proxy, one
// client, interleaved (compare). docs/performance.md has the ratios.
func BenchmarkProxyToolsCall(b *testing.B) {
	bt := newBenchTargets(b, benchUpstream(b))
	urls := []string{bt.direct, bt.plain, bt.guarded}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for _, u := range urls {
		if err := call(c, u, bt.token); err != nil {
			b.Fatal(err)
		}
	}
	compare(b, []string{"direct", "plain", "mcpguard"}, func(i int) error { return call(c, urls[i], bt.token) })
}

// BenchmarkProxySSE: a GET event stream of 1000 events of 100 bytes, each
// flushed by the upstream, read whole by the client, interleaved as in
// BenchmarkProxyToolsCall: one op is one stream per target.
func BenchmarkProxySSE(b *testing.B) { benchSSE(b, "", 1000*108) }

// BenchmarkProxySSEIDs is BenchmarkProxySSE with an id line on every
// event: through mcpguard, the answer is to a request without a session,
// so every ID is recorded with its principal (Last-Event-ID binding).
func BenchmarkProxySSEIDs(b *testing.B) { benchSSE(b, "?ids=1", 1000*117) }

func benchSSE(b *testing.B, query string, size int64) {
	bt := newBenchTargets(b, benchUpstream(b))
	urls := []string{bt.direct, bt.plain, bt.guarded}
	c := &http.Client{}
	compare(b, []string{"direct", "plain", "mcpguard"}, func(i int) error {
		req, _ := http.NewRequest("GET", urls[i]+query, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bt.token)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && n != size {
			err = fmt.Errorf("%d bytes", n)
		}
		return err
	})
}

// TestIdleStreamMemory measures what one idle open GET stream costs in
// the proxy: open N streams directly, through a plain ReverseProxy and
// through mcpguard proxy (all in this process, so the client's and the
// upstream's share is in every figure), and subtract the direct figure.
// It runs with MCPGUARD_BENCH set only (it is a measurement, not a
// check), and reports heap and stack in use per stream.
func TestIdleStreamMemory(t *testing.T) {
	if os.Getenv("MCPGUARD_BENCH") == "" {
		t.Skip("a measurement: set MCPGUARD_BENCH=1")
	}
	const n = 200
	bt := newBenchTargets(t, benchUpstream(t))
	base := runtime.NumGoroutine()
	measure := func(u string) float64 {
		c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}}
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base+4 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var bodies []io.ReadCloser
		for range n {
			req, _ := http.NewRequest("GET", u+"?idle=1", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+bt.token)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, resp.Body)
		}
		time.Sleep(200 * time.Millisecond)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		t.Logf("%s: %d goroutines for %d streams", u, runtime.NumGoroutine()-base, n)
		for _, body := range bodies {
			body.Close()
		}
		c.CloseIdleConnections()
		return float64((after.HeapInuse+after.StackInuse)-(before.HeapInuse+before.StackInuse)) / n
	}
	measure(bt.direct) // warm-up: pools, connections
	direct := measure(bt.direct)
	guarded := measure(bt.guarded)
	plain := measure(bt.plain)
	t.Logf("per idle stream: direct %.1f KiB; plain ReverseProxy +%.1f KiB; mcpguard proxy +%.1f KiB",
		direct/1024, (plain-direct)/1024, (guarded-direct)/1024)
}
