// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package-lock.json) against
// real everything-servers directly, behind mcpguard's library and behind
// the mcpguard proxy binary, and fails on any per-scenario difference. It
// writes docs/conformance.md. See docs/conformance.md for how to run it.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/heldport"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// everythingServer is the go-sdk's conformance server, built from the
// module version go.mod pins.
const everythingServer = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// upstreamsDir holds the reference TypeScript everything server
// (@modelcontextprotocol/server-everything, integration/upstreams' own
// lockfile) and everything-host.mjs, which binds it to loopback.
var upstreamsDir = filepath.Join("..", "upstreams")

// A server is one everything-server and the requirement sets it is run
// against. stdio names, for a server that also speaks stdio, its command
// (run in upstreamsDir; "node" is the suite's Node.js): it is reached the
// stdio way too.
type server struct {
	name, doc string
	revs      []string
	stdio     []string
}

var servers = []server{
	{"go-sdk", "the go-sdk's `conformance/everything-server` (the go.mod version; stateful for 2025-11-25, stateless for 2026-07-28)",
		[]string{"2025-11-25", "2026-07-28"}, nil},
	{"typescript", "the reference TypeScript `@modelcontextprotocol/server-everything` (integration/upstreams' lockfile), Streamable HTTP, stateful; it speaks protocol revisions up to 2025-11-25 only, so it runs that requirement set",
		[]string{"2025-11-25"}, []string{"node", filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}},
}

// parallel bounds the suite runs at once; rerunAttempts the runs again
// of a scenario that differs from direct; scenarioTimeout is each
// scenario's (the suite's default, 30 s, is too short on a loaded
// 2-core machine with this many runs).
const (
	parallel        = 15
	rerunAttempts   = 3
	scenarioTimeout = "120000"
)

// ways are how the suite reaches every server; stdioWay is how it
// reaches a server that speaks stdio too (server.stdio).
var ways = []string{"direct", "library", "library+token", "proxy", "proxy+token", "caddy"}

// stdioWay is the mcpguard proxy running the server's stdio mode as a
// stdio route, behind the token front: a stdio route serves no anonymous
// request (a child always has a user), so there is no token-less stdio
// way.
const stdioWay = "stdio+token"

// waysOf are the ways s is reached, direct first.
func (s server) waysOf() []string {
	if s.stdio != nil {
		return append(slices.Clip(ways), stdioWay)
	}
	return ways
}

// check is one check of a scenario, as the suite writes it (checks.json).
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// outcome is one scenario's checks, by id; counts for the table.
type outcome struct {
	status       map[string]string
	message      map[string]string
	pass, fail   int
	firstFailure string
}

func (o outcome) String() string {
	if o.status == nil {
		return "missing ✗"
	}
	if o.fail == 0 {
		return fmt.Sprintf("%d/%d", o.pass, o.pass)
	}
	return fmt.Sprintf("%d/%d ✗", o.pass, o.pass+o.fail)
}

// same reports whether o, behind mcpguard (reached way), has the checks
// of d, direct, with the same status, except the checks that mcpguard
// passes for the server (betterBehind, prefix "server revision scenario
// "), which may pass behind it while failing directly, and, the stdio
// way, the checks of stdioDiffers, which may have any other status.
func same(prefix, way string, d, o outcome, used map[string]bool) bool {
	if d.status == nil || o.status == nil || len(d.status) != len(o.status) {
		return false
	}
	for id, s := range d.status {
		switch os, ok := o.status[id]; {
		case !ok:
			return false
		case os == s:
		case s == "FAILURE" && os == "SUCCESS" && betterBehind[prefix+id] != "":
			used[prefix+id] = true
		case way == stdioWay && stdioDiffers[prefix+id] != "":
			used[prefix+id] = true
		default:
			return false
		}
	}
	return true
}

// differences lists the checks whose status differs between direct d and o.
func differences(d, o outcome) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(d.status)) {
		if s, ok := o.status[id]; !ok {
			out = append(out, fmt.Sprintf("%s: %s directly, not run", id, d.status[id]))
		} else if s != d.status[id] {
			out = append(out, fmt.Sprintf("%s: %s directly, %s (%s)", id, d.status[id], s, o.message[id]))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(o.status)) {
		if _, ok := d.status[id]; !ok {
			out = append(out, fmt.Sprintf("%s: not run directly, %s (%s)", id, o.status[id], o.message[id]))
		}
	}
	return strings.Join(out, "; ")
}

// run is one suite run: a requirement set of a server reached one way.
type run struct {
	server, rev, way string
	target           string // the MCP endpoint the suite is pointed at
	plain            string // the caddy way: Caddy's plain-HTTP endpoint, for the scenarios of overTLS
	upstream, proxy  *proc  // the run's processes (proxy nil but for the proxy and caddy ways)
	ca               string // the caddy way: Caddy's local CA, which the suite trusts
	results          map[string]outcome
	order            []string
	err              error
	took             time.Duration
}

func TestConformance(t *testing.T) {
	if os.Getenv("MCPGUARD_CONFORMANCE") == "" {
		t.Skip("set MCPGUARD_CONFORMANCE=1 to run the MCP conformance suite (docs/conformance.md)")
	}
	node, _ := filepath.Abs("node_modules/.bin/node")
	suite, _ := filepath.Abs("node_modules/@modelcontextprotocol/conformance/dist/index.js")
	host, _ := filepath.Abs(filepath.Join(upstreamsDir, "everything-host.mjs"))
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s missing: run npm ci in integration/conformance (%v)", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "package.json")); err != nil {
		t.Fatalf("the TypeScript everything server is missing: run npm ci in integration/upstreams (%v)", err)
	}
	version := suiteVersion(t)
	dir := t.TempDir()
	es := filepath.Join(dir, "everything-server")
	bin := filepath.Join(dir, "mcpguard")
	for pkg, out := range map[string]string{everythingServer: es, "github.com/mcpguard/mcpguard/cmd/mcpguard": bin} {
		if out, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}

	// MCPGUARD_CONFORMANCE_WAYS (comma-separated, e.g. "stdio+token")
	// runs only those ways, for a developer's look at one way: each run's
	// time and failing checks are logged, a request that timed out fails
	// the test, and nothing else is checked (no baseline ran).
	only := map[string]bool{}
	for w := range strings.SplitSeq(os.Getenv("MCPGUARD_CONFORMANCE_WAYS"), ",") {
		if w = strings.TrimSpace(w); w != "" {
			only[w] = true
		}
	}
	caddyBin := ""
	if len(only) == 0 || only["caddy"] {
		caddyBin = buildCaddy(t, dir)
	}

	// Every run gets its own upstream, so that no scenario sees another's
	// state (list_changed triggers, subscriptions), and all runs go at
	// once: the suite mostly waits on the network.
	var runs []*run
	stdioOf := map[string][]string{}
	for _, s := range servers {
		stdioOf[s.name] = s.stdio
		for _, rev := range s.revs {
			for _, way := range s.waysOf() {
				if len(only) > 0 && !only[way] {
					continue
				}
				runs = append(runs, &run{server: s.name, rev: rev, way: way})
			}
		}
	}
	// No port is chosen and released for another process to bind, so
	// that no process can take another's (a proxy forwarding to another
	// proxy or guard answers 502 to everything). The TypeScript upstreams
	// and the token ways' proxies bind port 0 and say which port they got;
	// the go-sdk upstreams and the token-less proxies, whose address must
	// be known before they start, get one that the test holds until just
	// before it starts them, outside the range the system gives port 0
	// and outgoing connections (heldport).
	ports := heldport.New(t, 2*len(runs))
	upstreams := make([]*proc, len(runs))
	for i, r := range runs {
		name := fmt.Sprintf("%s %s %s upstream", r.server, r.rev, r.way)
		switch {
		case r.way == stdioWay: // the proxy starts it, per session
		case r.server == "go-sdk":
			addr := ports.Take()
			upstreams[i] = startProc(t, name, "", nil, es, "-http", addr, fmt.Sprintf("-stateless=%t", r.rev != "2025-11-25"))
			upstreams[i].addr = addr
		default:
			upstreams[i] = startProc(t, name, upstreamsDir, []string{"PORT=0"}, node, host)
			upstreams[i].listening = everythingListening
		}
	}
	// Every upstream answers before anything is put in front of it.
	for _, p := range upstreams {
		if p != nil {
			p.wait(t, "/mcp", nil)
		}
	}
	var proxies []*proc
	for i, r := range runs {
		if r.way == stdioWay {
			cmd := slices.Clone(stdioOf[r.server])
			for j, a := range cmd {
				if a == "node" {
					cmd[j] = node
				} else if !filepath.IsAbs(a) && strings.Contains(a, string(filepath.Separator)) {
					cmd[j], _ = filepath.Abs(filepath.Join(upstreamsDir, a))
				}
			}
			r.target, r.proxy = startProxy(t, bin, dir, fmt.Sprintf("%s-%s-%s", r.server, r.rev, r.way), "", cmd, true, ports)
			proxies = append(proxies, r.proxy)
			continue
		}
		up := upstreams[i].url("/mcp")
		switch r.way {
		case "direct":
			r.target = up
		case "library", "library+token":
			r.target = startLibrary(t, up, r.way == "library+token")
		case "proxy", "proxy+token":
			var p *proc
			r.target, p = startProxy(t, bin, dir, fmt.Sprintf("%s-%s-%s", r.server, r.rev, r.way), up, nil, r.way == "proxy+token", ports)
			r.proxy = p
			proxies = append(proxies, p)
		case "caddy":
			r.target, r.plain, r.proxy, r.ca = startCaddy(t, caddyBin, dir, fmt.Sprintf("%s-%s-%s", r.server, r.rev, r.way), up, ports)
		}
		r.upstream = upstreams[i]
	}
	// Every proxy is ready (keys loaded, upstream reachable) and forwards
	// to its upstream, through its front for the token way, before the
	// runs start.
	for _, p := range proxies {
		p.wait(t, "/readyz", nil)
		p.wait(t, "", throughProxy)
	}
	for _, r := range runs {
		if r.way == "caddy" {
			r.proxy.wait(t, "", throughCaddy(r.ca))
		}
	}
	var wg sync.WaitGroup
	var plainMu sync.Mutex
	slots := make(chan struct{}, parallel)
	first := func(r *run) {
		start := time.Now()
		r.results, r.order, r.err = runSuite(node, suite, r.target, r.ca, []string{"--requirements", r.rev}, filepath.Join(dir, "out", r.server, r.rev, strings.ReplaceAll(r.way, "+", "-")))
		r.took = time.Since(start)
	}
	for _, r := range runs {
		if r.way == stdioWay {
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			first(r)
		})
	}
	wg.Wait()
	// The stdio way's runs then, alone: each MCP session starts a child
	// process, whose start a machine loaded by the other runs delays past
	// the suite's bounds (5 s for an initialize in server-initialize; on
	// a machine at load 70, the bridge's 30 s start_timeout).
	for _, r := range runs {
		if r.way == stdioWay {
			first(r)
		}
	}
	// The caddy way's runs of the scenarios that the suite cannot run
	// over TLS (overTLS) are then run again over Caddy's plain-HTTP
	// listener, whose results count; the TLS results must still differ
	// from direct, so that the list shrinks with the suite.
	type job struct {
		r  *run
		sc string
	}
	var plainJobs []job
	for _, r := range runs {
		if r.way != "caddy" || r.err != nil {
			continue
		}
		var d *run
		for _, o := range runs {
			if o.server == r.server && o.rev == r.rev && o.way == "direct" {
				d = o
			}
		}
		for _, sc := range r.order {
			if overTLS[r.server+" "+r.rev+" "+sc] == "" {
				continue
			}
			if d != nil && d.err == nil && same(r.server+" "+r.rev+" "+sc+" ", r.way, d.results[sc], r.results[sc], map[string]bool{}) {
				t.Errorf("overTLS lists %s %s %s, which gives the same checks through Caddy over TLS as directly: remove it", r.server, r.rev, sc)
			}
			plainJobs = append(plainJobs, job{r, sc})
		}
	}
	for _, j := range plainJobs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			res, _, err := runSuite(node, suite, j.r.plain, "", []string{"--spec-version", j.r.rev, "--scenario", j.sc}, filepath.Join(dir, "plain", j.r.server, j.r.rev, j.sc))
			plainMu.Lock()
			defer plainMu.Unlock()
			if err != nil {
				j.r.err = fmt.Errorf("%s over plain HTTP: %w", j.sc, err)
				return
			}
			j.r.results[j.sc] = res[j.sc]
		})
	}
	wg.Wait()
	for _, r := range runs {
		t.Logf("%s %s %s: the suite ran %v", r.server, r.rev, r.way, r.took.Round(time.Second))
	}
	for _, r := range runs {
		if r.err != nil {
			r.dump(t)
			t.Fatalf("%s %s %s: %v", r.server, r.rev, r.way, r.err)
		}
	}
	if len(only) > 0 {
		for _, r := range runs {
			for _, sc := range r.order {
				o := r.results[sc]
				for _, id := range slices.Sorted(maps.Keys(o.status)) {
					if o.status[id] != "FAILURE" {
						continue
					}
					t.Logf("%s %s %s %s %s: %s", r.server, r.rev, r.way, sc, id, o.message[id])
					if strings.Contains(o.message[id], "timed out") || strings.Contains(o.message[id], "did not complete within") {
						t.Errorf("%s %s %s %s: a request timed out: %s", r.server, r.rev, r.way, sc, o.message[id])
					}
				}
			}
		}
		return
	}

	// A scenario whose checks differ between ways, or whose row is not
	// the one docs/conformance.md has (unless the page is being
	// regenerated), is run again, every way, and the new results are the
	// ones that count: a difference must reproduce to fail the test. Some
	// scenarios wait on timers (streams, subscriptions) and a loaded
	// 2-core machine misses them at random, a different check each time;
	// so a scenario gets up to rerunAttempts more runs, the later ones
	// one suite at a time, and stops as soon as it agrees.
	byKey := map[string]*run{}
	for _, r := range runs {
		byKey[r.server+" "+r.rev+" "+r.way] = r
	}
	update := os.Getenv("MCPGUARD_CONFORMANCE_UPDATE") != ""
	old, _ := os.ReadFile(docPath)
	oldRows := docRows(splitSections(old)["server"])
	differing := func(log bool) []rerun {
		var again []rerun
		for _, s := range servers {
			for _, rev := range s.revs {
				d := byKey[s.name+" "+rev+" direct"]
				for _, sc := range d.order {
					differs := !update && oldRows[section(s.name, rev)][sc] != row(byKey, s, rev, sc)
					for _, way := range s.waysOf()[1:] {
						o := byKey[s.name+" "+rev+" "+way]
						if !same(s.name+" "+rev+" "+sc+" ", way, d.results[sc], o.results[sc], map[string]bool{}) {
							differs = true
							if log {
								t.Logf("%s %s %s %s differs from direct: %s", s.name, rev, way, sc, differences(d.results[sc], o.results[sc]))
								o.dump(t)
							}
						}
					}
					if differs {
						again = append(again, rerun{s, rev, sc})
					}
				}
			}
		}
		return again
	}
	var mu sync.Mutex
	var rerunErr []string
	for attempt := 1; attempt <= rerunAttempts; attempt++ {
		again := differing(true)
		if len(again) == 0 {
			break
		}
		t.Logf("attempt %d: running %d scenarios again: %v", attempt, len(again), again)
		if attempt > 1 {
			slots = make(chan struct{}, 1)
		}
		for i, a := range again {
			for _, way := range a.server.waysOf() {
				r := byKey[a.server.name+" "+a.rev+" "+way]
				wg.Go(func() {
					slots <- struct{}{}
					defer func() { <-slots }()
					target, ca := r.target, r.ca
					if way == "caddy" && overTLS[a.server.name+" "+a.rev+" "+a.scenario] != "" {
						target, ca = r.plain, ""
					}
					res, _, err := runSuite(node, suite, target, ca, []string{"--spec-version", a.rev, "--scenario", a.scenario}, filepath.Join(dir, "again", fmt.Sprint(attempt), fmt.Sprint(i), strings.ReplaceAll(way, "+", "-")))
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						rerunErr = append(rerunErr, fmt.Sprintf("%s %s %s %s again: %v", a.server.name, a.rev, way, a.scenario, err))
						r.dump(t)
						return
					}
					r.results[a.scenario] = res[a.scenario]
				})
			}
		}
		wg.Wait()
	}
	for _, e := range rerunErr {
		t.Error(e)
	}

	var diffs []string
	used := map[string]bool{}
	for _, s := range servers {
		for _, rev := range s.revs {
			d := byKey[s.name+" "+rev+" direct"]
			for _, sc := range d.order {
				for _, way := range s.waysOf()[1:] {
					o := byKey[s.name+" "+rev+" "+way].results[sc]
					if !same(s.name+" "+rev+" "+sc+" ", way, d.results[sc], o, used) {
						diff := fmt.Sprintf("%s %s %s: %s %v, direct %v: %s", s.name, rev, sc, way, o, d.results[sc], differences(d.results[sc], o))
						diffs = append(diffs, diff)
						t.Error(diff)
						byKey[s.name+" "+rev+" "+way].dump(t)
					}
				}
				key := s.name + " " + rev + " " + sc
				_, explained := failsDirectly[key]
				switch failing := d.results[sc].fail > 0; {
				case failing && !explained:
					t.Errorf("%s fails directly (%s) and failsDirectly does not say why", key, d.results[sc].firstFailure)
				case !failing && explained:
					t.Errorf("%s passes directly now: remove it from failsDirectly", key)
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(betterBehind)) {
		if !used[k] {
			t.Errorf("betterBehind lists %s, which passes nowhere behind mcpguard while failing directly: remove it", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(stdioDiffers)) {
		if !used[k] {
			t.Errorf("stdioDiffers lists %s, which the stdio way no longer changes: remove it", k)
		}
	}
	// The server section of docs/conformance.md (doc_test.go).
	checkDocSection(t, "server", render(version, byKey, diffs), len(diffs) == 0)
}

// rerun is a scenario of a server's requirement set run again.
type rerun struct {
	server        server
	rev, scenario string
}

func (a rerun) String() string { return a.server.name + " " + a.rev + " " + a.scenario }

// suiteVersion is the pinned suite's version, from its package.json.
func suiteVersion(t *testing.T) string {
	b, err := os.ReadFile("node_modules/@modelcontextprotocol/conformance/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.Version
}

// proc is a server process started for the test.
type proc struct {
	name   string
	addr   string  // host:port it listens on, once known
	target string  // a proxy's MCP endpoint (its front's for the token way)
	plain  string  // Caddy's plain-HTTP MCP endpoint (startCaddy)
	out    *output // what it wrote to stdout and stderr
	exited chan struct{}
	// listening, when set, matches the line of its output that gives the
	// address it bound (port 0); onAddr are called with it, once.
	listening *regexp.Regexp
	onAddr    []func(addr string)
	once      sync.Once
	dumped    sync.Once
}

// everythingListening is the line everything-host.mjs prints once bound.
var everythingListening = regexp.MustCompile(`everything-host listening on (127\.0\.0\.1:\d+)`)

// proxyListening is the mcpguard proxy's banner line.
var proxyListening = regexp.MustCompile(`mcpguard proxy listening on (127\.0\.0\.1:\d+)`)

// output keeps the first and the last outputKeep bytes a process writes.
type output struct {
	mu         sync.Mutex
	head, tail []byte
	dropped    int
}

const outputKeep = 32 << 10

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if room := outputKeep - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	o.tail = append(o.tail, p...)
	if over := len(o.tail) - outputKeep; over > 0 {
		o.dropped += over
		o.tail = append(o.tail[:0], o.tail[over:]...)
	}
	return n, nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped == 0 {
		return string(o.head) + string(o.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", o.head, o.dropped, o.tail)
}

// startProc starts name in dir (the test's directory if "") until the
// test ends, then kills it.
func startProc(t *testing.T, name, dir string, env []string, bin string, args ...string) *proc {
	return startProcStop(t, name, dir, env, false, bin, args...)
}

// stopGrace bounds a graceful stop (startProcStop) before the kill.
const stopGrace = 20 * time.Second

// startProcStop is startProc, but with graceful it ends the process with
// SIGINT, as an operator would, and kills it only after stopGrace: a
// proxy with a stdio route then stops and reaps its children, which a
// kill would leave running.
func startProcStop(t *testing.T, name, dir string, env []string, graceful bool, bin string, args ...string) *proc {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	if graceful {
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = stopGrace
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, out: &output{}, exited: make(chan struct{})}
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { cancel(); <-p.exited })
	return p
}

// startupTimeout bounds a process's start (the machine may be loaded).
const startupTimeout = 90 * time.Second

// started blocks until p's address is known: at once unless it bound
// port 0, else from its output.
func (p *proc) started(t *testing.T) {
	t.Helper()
	if p.listening != nil && p.addr == "" {
		for deadline := time.Now().Add(startupTimeout); p.addr == ""; time.Sleep(50 * time.Millisecond) {
			if m := p.listening.FindStringSubmatch(p.out.String()); m != nil {
				p.addr = m[1]
				break
			}
			select {
			case <-p.exited:
				t.Fatalf("%s exited before listening:\n%s", p.name, p.out)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not say where it listens within %v:\n%s", p.name, startupTimeout, p.out)
			}
		}
	}
	p.once.Do(func() {
		for _, f := range p.onAddr {
			f(p.addr)
		}
	})
}

// url is p's address with path.
func (p *proc) url(path string) string { return "http://" + p.addr + path }

// wait blocks until p has started and probe passes: by default, a GET of
// path answers, and 200 for /readyz.
func (p *proc) wait(t *testing.T, path string, probe func(*proc) error) {
	t.Helper()
	p.started(t)
	if probe == nil {
		probe = func(p *proc) error { return get(p.url(path), path == "/readyz") }
	}
	for deadline := time.Now().Add(startupTimeout); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-p.exited:
			t.Fatalf("%s exited:\n%s", p.name, p.out)
		default:
		}
		err := probe(p)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %v: %v\n%s", p.name, startupTimeout, err, p.out)
		}
	}
}

var probeClient = &http.Client{Timeout: 5 * time.Second}

// get GETs u: any answer will do, a 200 with ok200.
func get(u string, ok200 bool) error {
	resp, err := probeClient.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if ok200 && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// throughProxy POSTs a ping to a proxy's target: the upstream's answer
// (a refusal without a session will do), not the proxy's 502, 503 or 504
// for an upstream it cannot reach.
func throughProxy(p *proc) error { return forwards(probeClient, p.target) }

// forwards POSTs a ping to target with c (see throughProxy).
func forwards(c *http.Client, target string) error {
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Errorf("POST %s: %s", target, resp.Status)
	}
	return nil
}

// dump writes p's output to the test log, once.
func (p *proc) dump(t *testing.T) {
	if p == nil {
		return
	}
	p.dumped.Do(func() { t.Logf("output of %s (%s):\n%s", p.name, p.addr, p.out) })
}

// dump writes the output of r's processes to the test log, once each.
func (r *run) dump(t *testing.T) {
	r.upstream.dump(t)
	r.proxy.dump(t)
}

// publicOperations makes every operation of both everything-servers
// public: the suite sends no token. completion/complete and
// resources/subscribe are public through the prompts and resources they
// name (middleware PublicOperations).
func publicOperations() middleware.PublicOperations {
	return middleware.PublicOperations{
		Methods: []string{"initialize", "ping", "server/discover", "notifications/initialized", "notifications/cancelled",
			"notifications/progress", "notifications/roots/list_changed", "notifications/tasks/status", "logging/setLevel",
			"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/unsubscribe"},
		Tools: []string{
			// go-sdk conformance/everything-server
			"__transient_tool_for_list_changed", "json_schema_2020_12_tool", "test_audio_content", "test_elicitation",
			"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling",
			"test_image_content", "test_input_required_result_capabilities", "test_input_required_result_elicitation",
			"test_input_required_result_list_roots", "test_input_required_result_multi_round", "test_input_required_result_multiple_inputs",
			"test_input_required_result_request_state", "test_input_required_result_sampling",
			"test_input_required_result_tampered_state", "test_logging_tool", "test_missing_capability", "test_multiple_content_types",
			"test_reconnection", "test_sampling", "test_simple_text", "test_streaming_elicitation", "test_tool_with_logging",
			"test_tool_with_progress", "test_trigger_prompt_change", "test_trigger_tool_change", "test_x_mcp_header",
			// the tasks extension's scenarios (unknown to both servers)
			"greet", "slow_compute", "confirm_delete", "failing_job", "multi_input", "protocol_error_job", "test_tool_with_task",
		},
		Prompts: []string{"__transient_prompt_for_list_changed", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
			"test_prompt_with_image", "test_simple_prompt", "test_input_required_result_prompt"},
		Resources: []string{"test://static-binary", "test://static-text", "test://embedded-in-multiple", "test://embedded-resource",
			"test://template/123/data", "test://watched-resource", "test://example-resource", "test://mixed-content-resource",
			"test://nonexistent-resource-for-conformance-testing"},
	}
}

// listen binds a loopback port for a server started later.
func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serve serves h on l until the test ends.
func serve(t *testing.T, l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// newIssuer is a new issuer of tokens for resource.
func newIssuer(t *testing.T, resource string) *authtest.Issuer {
	return authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource, Now: time.Now})
}

// serveFront serves on front, for the token ways, a small front that adds
// a valid token of iss to every request and forwards it to guard
// (host:port); the resource is the front's URL, since it is the address
// clients use (and the Origin the suite sends).
func serveFront(t *testing.T, front net.Listener, iss *authtest.Issuer, guard string) {
	tok := iss.Token(t, authtest.Token{Claims: map[string]any{"exp": time.Now().Add(time.Hour).Unix()}})
	u, _ := url.Parse("http://" + guard + "/mcp")
	serve(t, front, forward(u, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }))
}

// startLibrary puts upstream behind mcpguard's library (Guard.Mount, every
// operation public), behind a token front when withToken, and returns the
// MCP endpoint's URL.
func startLibrary(t *testing.T, upstream string, withToken bool) string {
	l := listen(t)
	resource := "http://" + l.Addr().String() + "/mcp"
	var front net.Listener
	if withToken {
		front = listen(t)
		resource = "http://" + front.Addr().String() + "/mcp"
	}
	iss := newIssuer(t, resource)
	if withToken {
		serveFront(t, front, iss, l.Addr().String())
	}
	g, err := mcpguard.New(mcpguard.Config{
		Resource:   resource,
		Issuers:    []string{iss.URL},
		Keys:       map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}},
		Operations: middleware.OperationPolicy{Public: publicOperations()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	mux := http.NewServeMux()
	u, _ := url.Parse(upstream)
	g.Mount(mux, forward(u, nil))
	serve(t, l, mux)
	return resource
}

// startProxy starts the mcpguard binary's proxy in front of upstream, or
// of a stdio route running the command stdio when it is not nil, with a
// configuration file that makes every operation public, behind a token
// front when withToken, and returns the MCP endpoint's URL and the
// process. With the front, the proxy binds port 0 and its banner says
// which port (the front forwards there once it is known, proc.started);
// without, its URL is the resource, so it gets a held port. It logs at
// warn: every failed forward, with the upstream's error, and no line per
// request.
func startProxy(t *testing.T, bin, dir, name, upstream string, stdio []string, withToken bool, ports *heldport.Ports) (string, *proc) {
	addr := "127.0.0.1:0"
	var front net.Listener
	if withToken {
		front = listen(t)
	} else {
		addr = ports.Take() // bound by the proxy at once
	}
	resource := "http://" + addr + "/mcp"
	if withToken {
		resource = "http://" + front.Addr().String() + "/mcp"
	}
	iss := newIssuer(t, resource)
	file := writeProxyConfig(t, dir, name, resource, upstream, stdio, iss.URL)
	p := startProcStop(t, "proxy "+name, "", nil, stdio != nil, bin, "proxy", "-addr", addr, "-config", file, "-log-level", "warn")
	p.target = resource
	if withToken {
		p.listening = proxyListening
		p.onAddr = append(p.onAddr, func(a string) { serveFront(t, front, iss, a) })
	} else {
		p.addr = addr
	}
	return resource, p
}

// writeProxyConfig writes the configuration file of the proxy ways (and
// of the caddy way's module): one route from resource to upstream, or to
// a stdio route running the command stdio when it is not nil, with
// issuer and every operation public, and returns its path. Every run of
// one way is one user (one token, or none), who holds many more streams at
// once than the default max_streams_per_user of 16 while the suite's
// scenarios run in parallel; the cap has its own tests (proxy
// TestStreamsPerUser), so here it is out of the way.
func writeProxyConfig(t *testing.T, dir, name, resource, upstream string, stdio []string, issuer string) string {
	po := publicOperations()
	route := map[string]any{
		"resource": resource, "issuers": []string{issuer},
		"max_streams_per_user": 10000,
		"operations": map[string]any{"public": map[string]any{
			"methods": po.Methods, "tools": po.Tools, "prompts": po.Prompts, "resources": po.Resources,
		}},
	}
	if stdio != nil {
		// A child per session; the suite does not end its sessions, so
		// they stay until the test ends: room for every scenario's.
		// Node.js's compile cache (a directory of the test's) shortens
		// each child's start, which the suite's 5 s bound on an
		// initialize (server-initialize) meets on a loaded machine.
		route["stdio"] = map[string]any{"command": stdio, "max_children": stdioChildren, "max_per_user": stdioChildren,
			"env": map[string]string{"NODE_COMPILE_CACHE": filepath.Join(dir, "node-compile-cache")}}
	} else {
		route["upstream"] = upstream
	}
	cfg := map[string]any{"routes": []any{route}}
	b, err := json.Marshal(cfg) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// stdioChildren bounds the children of the stdio way's route, in all and
// for its one user (the front's token): above the sessions one run of
// the suite opens, reruns included.
const stdioChildren = 256

// forward is a reverse proxy to the URL u (its path replaces the
// request's) that keeps the client's Host (the suite's DNS-rebinding
// scenario sends its own) and streams SSE at once.
//
// It reads and writes at once (full duplex): the upstream may answer,
// as the stdio bridge does with a POST's SSE header, while the
// transport still reads the client's body (after the body's last byte
// it reads once more, for io.EOF). Without full duplex, net/http's
// HTTP/1 server closes the request body when the handler's header goes
// out; that last read then fails ("invalid Read on closed Body"), the
// transport closes the upstream connection as a failed write, and
// ReverseProxy aborts the answer it had begun: an SSE stream cut after
// its header, which a client without an event ID to resume from waits
// on until its own timeout (60 s for the TypeScript SDK). It was the
// stdio way's stalls (TestForwardFullDuplex).
func forward(u *url.URL, edit func(*http.Request)) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = u.Scheme, u.Host, u.Path, ""
			pr.Out.Host = pr.In.Host
			if edit != nil {
				edit(pr.Out)
			}
		},
		FlushInterval: -1,
		ErrorLog:      discardLog,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ErrNotSupported over HTTP/2, which is full duplex already.
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
}

var scenarioDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT[0-9-]+Z$`)

// runSuite runs the suite's server scenarios selected by args against
// target (trusting the CA certificate file ca, if any) and reads the
// checks of each scenario, in the suite's order.
func runSuite(node, suite, target, ca string, args []string, out string) (map[string]outcome, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{suite, "server", "--url", target, "-o", out, "--timeout", scenarioTimeout}, args...)...)
	if ca != "" {
		cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca)
	}
	log, _ := cmd.CombinedOutput() // non-zero when any scenario fails; the checks say which
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("suite %v against %s timed out:\n%s", args, target, tail(log))
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, nil, fmt.Errorf("suite %v against %s wrote no results (%v):\n%s", args, target, err, tail(log))
	}
	res := map[string]outcome{}
	type named struct{ name, at string }
	var seen []named
	for _, e := range entries {
		m := scenarioDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		o := outcome{status: map[string]string{}, message: map[string]string{}}
		for _, c := range checks {
			o.status[c.ID] = c.Status
			o.message[c.ID] = c.ErrorMessage
			switch c.Status {
			case "SUCCESS":
				o.pass++
			case "FAILURE":
				o.fail++
				if o.firstFailure == "" {
					o.firstFailure = c.ID + ": " + c.ErrorMessage
				}
			}
		}
		res[m[1]] = o
		seen = append(seen, named{m[1], strings.TrimPrefix(e.Name(), "server-"+m[1])})
	}
	slices.SortFunc(seen, func(a, b named) int { return strings.Compare(a.at, b.at) })
	names := make([]string, len(seen))
	for i, s := range seen {
		names[i] = s.name
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("suite %v against %s: no scenario results:\n%s", args, target, tail(log))
	}
	return res, names, nil
}

func tail(b []byte) []byte {
	if len(b) > 4<<10 {
		return b[len(b)-4<<10:]
	}
	return b
}

// section is the heading of a server's table for rev.
func section(server, rev string) string { return "## " + server + ", " + rev }

// row is a scenario's table row.
func row(byKey map[string]*run, s server, rev, sc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s |", sc)
	for _, w := range s.waysOf() {
		fmt.Fprintf(&b, " %v", byKey[s.name+" "+rev+" "+w].results[sc])
		if w == "caddy" && overTLS[s.name+" "+rev+" "+sc] != "" {
			b.WriteString(" (http)")
		}
		b.WriteString(" |")
	}
	return b.String()
}

// docRows reads the table rows of a generated page, by section heading
// and scenario.
func docRows(doc []byte) map[string]map[string]string {
	rows := map[string]map[string]string{}
	var sec string
	for line := range strings.SplitSeq(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			sec = line
			rows[sec] = map[string]string{}
		case strings.HasPrefix(line, "| ") && sec != "":
			if f := strings.Fields(line); len(f) > 1 {
				rows[sec][f[1]] = line
			}
		}
	}
	return rows
}

// render writes docs/conformance.md from the run.
func render(version string, byKey map[string]*run, diffs []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `# MCP conformance

Generated by `+"`MCPGUARD_CONFORMANCE=1 MCPGUARD_CONFORMANCE_UPDATE=1 go test -run TestConformance ./integration/conformance/`"+`;
do not edit by hand. `+"`.ci/run`"+` runs the test without the update
variable (after `+"`npm ci`"+` in `+"`integration/conformance`"+` and
`+"`integration/upstreams`"+`): it fails when any scenario's checks differ
between direct and behind mcpguard, when a scenario fails directly for a
reason not listed below, or when this page is not what the run produces. A
newer suite version is a deliberate update of
`+"`integration/conformance/package-lock.json`"+` that regenerates this page.

Suite: `+"`@modelcontextprotocol/conformance@%s`"+`, every server scenario of
`+"`--requirements`"+` 2025-11-25 and 2026-07-28 (scored and unscored), run
with Node.js from the npm `+"`node`"+` package, against:
`, version)
	for _, s := range servers {
		fmt.Fprintf(&b, "\n- **%s**: %s.", s.name, s.doc)
	}
	b.WriteString(`

Each server is reached six ways, and a server that speaks stdio too a
seventh, each with its own server process; all runs at once, then the
stdio way's alone (each MCP session there starts a child process, which a
machine loaded by the other runs delays past the suite's bounds):

- **direct**: the suite talks to the everything-server.
- **library**: through ` + "`mcpguard.Guard.Mount`" + ` (every operation of the
  server public, ` + "`OperationPolicy.Public`" + `; the suite sends no token) in front
  of a reverse proxy to the server.
- **library+token**: the same, behind a small front that adds a valid
  bearer token to every request, so that the authorized path runs (the
  front's URL is the resource).
- **proxy**: through the ` + "`mcpguard proxy`" + ` binary, configured by a file
  that makes the same operations public (its default identity mode: the
  server receives the proxy's assertion).
- **proxy+token**: the proxy behind the token-adding front.
- **caddy**: through Caddy (` + "`caddy/cmd/caddy`" + `, built by the test) with the
  ` + "`http.handlers.mcpguard`" + ` module configured by the proxy's file, over TLS
  (` + "`tls internal`" + `; the suite trusts Caddy's local CA through
  ` + "`NODE_EXTRA_CA_CERTS`" + `), HTTP/1.1 and HTTP/2; the few scenarios the
  suite cannot run over TLS (listed at the end) over a plain-HTTP listener
  of the same Caddy.
- **stdio+token**: the proxy with a stdio route (docs/proxy.md, "stdio
  upstreams") that runs the server in its stdio mode, a child process per
  MCP session, behind the token-adding front: a stdio route serves no
  anonymous request, so there is no token-less stdio way. The baseline is
  the same server in its own Streamable HTTP mode (direct).

A scenario whose checks differ between ways, or whose row differs from
this page, is run again alone, every way at once; only a difference that
reproduces fails the test. Cells are
passed/total checks of the counted run; ✗ marks a scenario with failing
checks.
`)
	for _, s := range servers {
		for _, rev := range s.revs {
			d := byKey[s.name+" "+rev+" direct"]
			fmt.Fprintf(&b, "\n%s\n\n| scenario | %s |\n|---|%s\n", section(s.name, rev), strings.Join(s.waysOf(), " | "), strings.Repeat("---|", len(s.waysOf())))
			for _, sc := range d.order {
				b.WriteString(row(byKey, s, rev, sc) + "\n")
			}
		}
	}
	b.WriteString("\n## Scenarios that fail directly\n\nThey fail the same way behind mcpguard (the test checks it), for these reasons:\n\n")
	for _, k := range slices.Sorted(maps.Keys(failsDirectly)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, failsDirectly[k])
	}
	b.WriteString("\n## Checks that pass only behind mcpguard\n\nmcpguard answers these itself, as the spec requires, where the server does not (the test allows exactly these):\n\n")
	for _, k := range slices.Sorted(maps.Keys(betterBehind)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, betterBehind[k])
	}
	b.WriteString("\n## Checks that differ behind the stdio bridge\n\n")
	if len(stdioDiffers) == 0 {
		b.WriteString("None: every check of the stdio way has the status it has against the server's own Streamable HTTP mode (the test fails on any difference).\n")
	} else {
		b.WriteString("The stdio way differs from the server's own Streamable HTTP mode in these checks only (the test allows exactly these):\n\n")
	}
	for _, k := range slices.Sorted(maps.Keys(stdioDiffers)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, stdioDiffers[k])
	}
	b.WriteString("\n## Scenarios the suite cannot run over TLS\n\nThe caddy way runs these over a plain-HTTP listener of the same Caddy, whose module has the same configuration for its http:// resource (cells marked (http)), and is compared with direct there; the test fails when one gives the same checks over TLS as directly:\n\n")
	for _, k := range slices.Sorted(maps.Keys(overTLS)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, overTLS[k])
	}
	if len(diffs) > 0 {
		b.WriteString("\n## Differences from direct\n\nThe run that generated this page found these (the test fails on each):\n\n")
		for _, d := range diffs {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(d, "|", "\\|"))
		}
	}
	return b.Bytes()
}
