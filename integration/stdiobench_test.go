package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/heldport"
)

// bridgeBenchEnv enables TestStdioBridgeBench; its value is the number of
// measured rounds (each bridge once per round, alternating), e.g. 6.
const bridgeBenchEnv = "MCPGUARD_BRIDGE_BENCH"

// Bounds of the benchmark, whatever bridgeBenchEnv says.
const (
	bridgeBenchMaxRounds = 50
	bridgeBenchUsers     = 10   // idle sessions (users) opened for start latency and memory
	bridgeBenchCalls     = 2000 // tools/call per bridge, round and concurrency
	bridgeBenchTimeout   = 30 * time.Minute
)

// supergatewayDir holds supergateway (its own lockfile) and host.mjs.
var supergatewayDir = filepath.Join("supergateway")

// TestStdioBridgeBench measures, in one run, mcpguard proxy's stdio bridge
// and supergateway (integration/supergateway's lockfile, stateful
// Streamable HTTP: a child per session) in front of the same child, the
// reference everything server in stdio mode, with the same client: raw
// HTTP POSTs of tools/call "echo" in one session, at 1 and 8 in flight;
// throughput and p50 per round, the bridges alternating; the latency of
// initialize (which starts the child) against starting the child directly
// on a pipe; and the memory of an idle user (an initialized session):
// the bridge process's growth per session plus its child's RSS and PSS.
// mcpguard validates a token on every request (a stdio route serves no
// anonymous request); supergateway checks nothing. It is not part of the
// default run: set MCPGUARD_BRIDGE_BENCH to a round count
// (docs/performance.md, "stdio bridge").
func TestStdioBridgeBench(t *testing.T) {
	v := os.Getenv(bridgeBenchEnv)
	if v == "" {
		t.Skipf("stdio bridge benchmark disabled; run it with %s set to a round count, e.g. %s=6 go test -run TestStdioBridgeBench -v ./integration/", bridgeBenchEnv, bridgeBenchEnv)
	}
	rounds, err := strconv.Atoi(v)
	if err != nil || rounds < 1 || rounds > bridgeBenchMaxRounds {
		t.Fatalf("%s=%q: want a round count from 1 to %d", bridgeBenchEnv, v, bridgeBenchMaxRounds)
	}
	node := requireUpstreamsNode(t)
	if _, err := os.Stat(filepath.Join(supergatewayDir, "node_modules", "supergateway", "package.json")); err != nil {
		t.Fatalf("supergateway is not installed: run `npm ci` in integration/supergateway (%v)", err)
	}
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bridgeBenchTimeout)
	defer cancel()
	dir := t.TempDir()
	child := []string{node, entry, "stdio"}

	mg := startMcpguardBridge(ctx, t, dir, child)
	sg := startSupergateway(ctx, t, node, child)
	bridges := []*benchBridge{mg, sg}

	// Warm up: a session each (the first token's keys are fetched, the
	// code paths run once), kept for the throughput rounds.
	for _, b := range bridges {
		s, _, err := b.initialize(ctx, "warm")
		if err != nil {
			t.Fatalf("%s: initialize: %v", b.name, err)
		}
		b.session = s
		for i := range 50 {
			if _, err := b.call(ctx, s, i); err != nil {
				t.Fatalf("%s: warm-up call: %v", b.name, err)
			}
		}
	}

	// Start latency and memory per idle user: bridgeBenchUsers sessions
	// each, one user each, the bridges alternating, after a reading of
	// the bridge's own memory.
	for _, b := range bridges {
		b.memBefore = readMem(t, b.pid)
	}
	var direct []time.Duration
	for i := range bridgeBenchUsers {
		for _, b := range bridges {
			_, d, err := b.initialize(ctx, fmt.Sprintf("user-%d", i))
			if err != nil {
				t.Fatalf("%s: initialize user-%d: %v", b.name, i, err)
			}
			b.starts = append(b.starts, d)
		}
		direct = append(direct, startDirect(ctx, t, child))
	}
	for _, b := range bridges {
		b.memAfter = readMem(t, b.pid)
		kids := descendants(t, b.pid)
		for _, pid := range kids {
			b.memChildren = b.memChildren.add(readMem(t, pid))
		}
		// The warm-up session's child and every user's (supergateway runs
		// each through /bin/sh -c, which stays: its memory counts).
		b.children = bridgeBenchUsers + 1
		t.Logf("%s: %d descendant processes for %d sessions", b.name, len(kids), b.children)
	}

	// Throughput and p50, in flight 1 and 8, one session, rounds
	// alternating which bridge goes first.
	for _, inFlight := range []int{1, 8} {
		for r := range rounds {
			order := bridges
			if r%2 == 1 {
				order = []*benchBridge{sg, mg}
			}
			for _, b := range order {
				res, err := b.round(ctx, inFlight, bridgeBenchCalls)
				if err != nil {
					t.Fatalf("%s: round %d, %d in flight: %v", b.name, r, inFlight, err)
				}
				b.rounds[inFlight] = append(b.rounds[inFlight], res)
			}
		}
	}

	report(t, mg, sg, direct, rounds)
}

// benchBridge is one bridge under measurement.
type benchBridge struct {
	name    string
	pid     int
	url     string
	token   func(user string) string // "" for none
	client  *http.Client
	session string // the warm-up session, for the rounds

	starts              []time.Duration
	memBefore, memAfter mem
	memChildren         mem
	children            int
	rounds              map[int][]roundResult
	mu                  sync.Mutex
	nextID              int
}

// roundResult is one round of calls.
type roundResult struct {
	perSecond float64
	p50, p99  time.Duration
	cpuPer    time.Duration // the bridge process's CPU per call (not its child's)
}

func newBenchBridge(name string, pid int, url string, token func(string) string) *benchBridge {
	return &benchBridge{
		name: name, pid: pid, url: url, token: token,
		client: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
			MaxIdleConnsPerHost: 16, DisableCompression: true,
		}},
		rounds: map[int][]roundResult{},
	}
}

// post sends one JSON-RPC message; it returns the answer's status,
// session header and body (read to its end: a stream ends after the
// answer).
func (b *benchBridge) post(ctx context.Context, user, session string, body []byte) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if b.token != nil {
		req.Header.Set("Authorization", "Bearer "+b.token(user))
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), out, err
}

// initialize opens a session for user: initialize (which starts the
// child; its time is returned) and notifications/initialized.
func (b *benchBridge) initialize(ctx context.Context, user string) (string, time.Duration, error) {
	start := time.Now()
	status, session, body, err := b.post(ctx, user, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bridge-bench","version":"1"}}}`))
	d := time.Since(start)
	switch {
	case err != nil:
		return "", 0, err
	case status != http.StatusOK || session == "" || !bytes.Contains(body, []byte(`"protocolVersion":"2025-11-25"`)):
		return "", 0, fmt.Errorf("initialize: %d, session %q: %.300s", status, session, body)
	}
	status, _, body, err = b.post(ctx, user, session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", 0, err
	}
	if status != http.StatusAccepted {
		return "", 0, fmt.Errorf("notifications/initialized: %d: %.300s", status, body)
	}
	return session, d, nil
}

// call is one tools/call of echo in session, with its latency.
func (b *benchBridge) call(ctx context.Context, session string, id int) (time.Duration, error) {
	msg := fmt.Sprintf("bench %d", id)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, id, msg)
	start := time.Now()
	status, _, out, err := b.post(ctx, "warm", session, body)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK || !bytes.Contains(out, []byte("Echo: "+msg+`"`)) || !bytes.Contains(out, fmt.Appendf(nil, `"id":%d`, id)) {
		return 0, fmt.Errorf("tools/call %d: %d: %.300s", id, status, out)
	}
	return d, nil
}

// round makes calls tools/call in b's warm session, inFlight at a time.
func (b *benchBridge) round(ctx context.Context, inFlight, calls int) (roundResult, error) {
	lat := make([]time.Duration, calls)
	next := make(chan int, calls)
	for i := range calls {
		next <- i
	}
	close(next)
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0 := cpuTime(b.pid)
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for i := range next {
				b.mu.Lock()
				b.nextID++
				id := 1000 + b.nextID
				b.mu.Unlock()
				d, err := b.call(ctx, b.session, id)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				lat[i] = d
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuTime(b.pid) - cpu0
	if len(errs) > 0 {
		return roundResult{}, errors.Join(errs...)
	}
	slices.Sort(lat)
	return roundResult{
		perSecond: float64(calls) / wall.Seconds(),
		p50:       lat[len(lat)/2],
		p99:       lat[len(lat)*99/100],
		cpuPer:    cpu / time.Duration(calls),
	}, nil
}

// startMcpguardBridge runs the mcpguard binary's proxy with one stdio
// route for child, tokens from an in-test issuer, logging warnings only.
func startMcpguardBridge(ctx context.Context, t *testing.T, dir string, child []string) *benchBridge {
	bin := filepath.Join(dir, "mcpguard")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpguard/mcpguard/cmd/mcpguard").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The resource names the proxy's address, so the port is chosen
	// first: outside the ephemeral range (heldport), which no outgoing
	// connection or port-0 listener is given meanwhile.
	addr := heldport.New(t, 1).Take()
	resource := "http://" + addr + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource, Now: time.Now})
	cfg, err := json.Marshal(map[string]any{"routes": []any{map[string]any{
		"resource": resource, "issuers": []string{iss.URL},
		"stdio": map[string]any{"command": child},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "bench.yaml") // JSON is YAML
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBenchProc(ctx, t, "mcpguard proxy", bin, "proxy", "-addr", addr, "-config", file, "-log-level", "warn")
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcpguard proxy not ready within a minute (%v):\n%s", err, p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tokens := map[string]string{}
	var mu sync.Mutex
	return newBenchBridge("mcpguard", p.pid, resource, func(user string) string {
		mu.Lock()
		defer mu.Unlock()
		if tok, ok := tokens[user]; ok {
			return tok
		}
		tok := iss.Token(t, authtest.Token{Subject: user})
		tokens[user] = tok
		return tok
	})
}

// supergatewayListening is host.mjs's line once bound.
var supergatewayListening = regexp.MustCompile(`supergateway-host listening on (127\.0\.0\.1:\d+)`)

// startSupergateway runs supergateway, stateful Streamable HTTP (a child
// per session, as mcpguard), logging nothing, bound to loopback by
// host.mjs. It runs the child through a shell (its --stdio is a command
// line); the paths have no characters a shell would read.
func startSupergateway(ctx context.Context, t *testing.T, node string, child []string) *benchBridge {
	for _, a := range child {
		if strings.ContainsAny(a, " '\"\\$`;&|<>()*?[]{}~#!") {
			t.Fatalf("child argument %q would need shell quoting", a)
		}
	}
	p := startBenchProc(ctx, t, "supergateway", node, filepath.Join(supergatewayDir, "host.mjs"),
		"--stdio", strings.Join(child, " "), "--outputTransport", "streamableHttp", "--stateful", "--port", "0", "--logLevel", "none")
	deadline := time.Now().Add(time.Minute)
	for {
		if m := supergatewayListening.FindStringSubmatch(p.out.String()); m != nil {
			return newBenchBridge("supergateway", p.pid, "http://"+m[1]+"/mcp", nil)
		}
		if time.Now().After(deadline) {
			t.Fatalf("supergateway did not listen within a minute:\n%s", p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchProc is a process started by the benchmark.
type benchProc struct {
	pid int
	out *lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBenchProc starts bin until the test ends, then stops it (SIGTERM,
// as an operator would; both bridges stop their children).
func startBenchProc(ctx context.Context, t *testing.T, name, bin string, args ...string) *benchProc {
	cmd := exec.CommandContext(ctx, bin, args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return &benchProc{pid: cmd.Process.Pid, out: out}
}

// startDirect starts child on a pipe and returns the time until its
// answer to initialize, then ends it.
func startDirect(ctx context.Context, t *testing.T, child []string) time.Duration {
	cmd := exec.CommandContext(ctx, child[0], child[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bridge-bench","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"id":1`)) {
			return time.Since(start)
		}
	}
	t.Fatalf("the child ended without answering initialize: %v", sc.Err())
	return 0
}

// mem is a process's resident memory, in KiB: RSS and PSS (shared pages
// divided among the processes that map them).
type mem struct{ rss, pss int64 }

func (m mem) add(o mem) mem { return mem{m.rss + o.rss, m.pss + o.pss} }

// readMem reads pid's /proc/PID/smaps_rollup.
func readMem(t *testing.T, pid int) mem {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatalf("memory of %d: %v", pid, err)
	}
	var m mem
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			m.rss = n
		case "Pss:":
			m.pss = n
		}
	}
	return m
}

// descendants are the processes below pid (children, grandchildren, …).
func descendants(t *testing.T, pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// cpuTime is pid's user and system CPU time (clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// report logs the figures: medians over the rounds (range), and the
// ratios of mcpguard to supergateway per round.
func report(t *testing.T, mg, sg *benchBridge, direct []time.Duration, rounds int) {
	var b strings.Builder
	fmt.Fprintf(&b, "stdio bridge benchmark: %d rounds, %d tools/call per bridge and round, %d idle users; load average %s\n", rounds, bridgeBenchCalls, bridgeBenchUsers, loadAverage())
	fmt.Fprintf(&b, "| | mcpguard | supergateway | mcpguard / supergateway |\n|---|---|---|---|\n")
	for _, inFlight := range []int{1, 8} {
		var ratioTP, ratioP50 []float64
		get := func(bb *benchBridge, f func(roundResult) float64) []float64 {
			var out []float64
			for _, r := range bb.rounds[inFlight] {
				out = append(out, f(r))
			}
			return out
		}
		tpM, tpS := get(mg, func(r roundResult) float64 { return r.perSecond }), get(sg, func(r roundResult) float64 { return r.perSecond })
		p50M, p50S := get(mg, func(r roundResult) float64 { return float64(r.p50) }), get(sg, func(r roundResult) float64 { return float64(r.p50) })
		p99M, p99S := get(mg, func(r roundResult) float64 { return float64(r.p99) }), get(sg, func(r roundResult) float64 { return float64(r.p99) })
		cpuM, cpuS := get(mg, func(r roundResult) float64 { return float64(r.cpuPer) }), get(sg, func(r roundResult) float64 { return float64(r.cpuPer) })
		for i := range tpM {
			ratioTP = append(ratioTP, tpM[i]/tpS[i])
			ratioP50 = append(ratioP50, p50M[i]/p50S[i])
		}
		fmt.Fprintf(&b, "| tools/call/s, %d in flight | %s | %s | %s |\n", inFlight, spread(tpM, "%.0f", 1), spread(tpS, "%.0f", 1), spread(ratioTP, "%.2f×", 1))
		fmt.Fprintf(&b, "| p50, %d in flight | %s | %s | %s |\n", inFlight, spread(p50M, "%.0f µs", 1e3), spread(p50S, "%.0f µs", 1e3), spread(ratioP50, "%.2f×", 1))
		fmt.Fprintf(&b, "| p99, %d in flight | %s | %s | |\n", inFlight, spread(p99M, "%.0f µs", 1e3), spread(p99S, "%.0f µs", 1e3))
		fmt.Fprintf(&b, "| bridge process CPU per call, %d in flight | %s | %s | |\n", inFlight, spread(cpuM, "%.0f µs", 1e3), spread(cpuS, "%.0f µs", 1e3))
	}
	durs := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = float64(d)
		}
		return out
	}
	fmt.Fprintf(&b, "| child start: initialize answered (direct on a pipe: %s) | %s | %s | |\n", spread(durs(direct), "%.0f ms", 1e6), spread(durs(mg.starts), "%.0f ms", 1e6), spread(durs(sg.starts), "%.0f ms", 1e6))
	for _, k := range []struct {
		name string
		f    func(mem) int64
	}{{"RSS", func(m mem) int64 { return m.rss }}, {"PSS", func(m mem) int64 { return m.pss }}} {
		per := func(bb *benchBridge) (float64, float64) {
			return float64(k.f(bb.memAfter)-k.f(bb.memBefore)) / bridgeBenchUsers, float64(k.f(bb.memChildren)) / float64(bb.children)
		}
		pm, cm := per(mg)
		ps, cs := per(sg)
		fmt.Fprintf(&b, "| idle user, %s: bridge growth + child | %.0f KiB + %.1f MiB | %.0f KiB + %.1f MiB | |\n", k.name, pm, cm/1024, ps, cs/1024)
		fmt.Fprintf(&b, "| bridge process %s, %d sessions | %.1f MiB | %.1f MiB | |\n", k.name, bridgeBenchUsers+1, float64(k.f(mg.memAfter))/1024, float64(k.f(sg.memAfter))/1024)
	}
	t.Log("\n" + b.String())
}

// spread is the median and range of xs, each divided by unit, in format.
func spread(xs []float64, format string, unit float64) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	return fmt.Sprintf(format+" ("+format+"–"+format+")", median(xs)/unit, lo/unit, hi/unit)
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
