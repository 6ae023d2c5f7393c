//go:build unix

package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/heldport"
)

// The README's trial ("Protect any MCP server"): its first sh block
// installs the Node packages and starts the servers, the last command in
// the foreground; its second runs the client and the audit, "in another
// terminal". TestREADMETrial runs those lines as a newcomer would, through
// bash, from the repository's root, with three changes only: `go run
// ./cmd/mcpguard` is a binary built once from the same package; each
// loopback port of the README (and the proxy's default -addr, 8080) is a
// free one outside the ephemeral range (heldport), so that runs on one
// machine do not collide; and the npm ci
// line is checked, not run (no network in tests: .ci/run installs from
// the same lockfiles first).

// trialTimeout bounds each step: a server's start, the client, the audit
// (its own -deadline is 3 min). Generous: the machine may be loaded.
const trialTimeout = 4 * time.Minute

// readmeTrial returns the two sh blocks of the README's trial.
func readmeTrial(t *testing.T) (servers, clients []string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Protect any MCP server\n")
	if !ok {
		t.Fatal(`README.md has no "## Protect any MCP server" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks, err := readmeBlocks(section, "sh")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 2 {
		t.Fatalf("the README's trial has %d sh blocks, want the servers' and the clients'", len(blocks))
	}
	lines := func(b string) []string {
		var out []string
		for _, l := range strings.Split(b, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	return lines(blocks[0]), lines(blocks[1])
}

var (
	npmCI       = regexp.MustCompile(`\(cd (\S+) && npm ci\)`)
	loopback    = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	portEnv     = regexp.MustCompile(`\bPORT=(\d+)`)
	bannerToken = regexp.MustCompile(`(?m)^ +(eyJ[\w-]+\.[\w-]+\.[\w-]+)$`)
	auditRow    = regexp.MustCompile(`(?m)^([A-Z0-9-]+) +(PASS|FAIL|SKIP) +(MUST|SHOULD|MAY) `)
)

// trialEnv is what the trial's lines run with.
type trialEnv struct {
	ports map[string]string // README port -> the run's
	bin   string            // mcpguard, built
	env   []string
}

// rewrite makes a README line runnable here (see the top of the file).
func (e *trialEnv) rewrite(line string) string {
	line = strings.ReplaceAll(line, "go run ./cmd/mcpguard ", e.bin+" ")
	line = loopback.ReplaceAllStringFunc(line, func(m string) string { return "127.0.0.1:" + e.ports[loopback.FindStringSubmatch(m)[1]] })
	line = portEnv.ReplaceAllStringFunc(line, func(m string) string { return "PORT=" + e.ports[portEnv.FindStringSubmatch(m)[1]] })
	if strings.Contains(line, e.bin+" proxy ") && !strings.Contains(line, " -addr ") {
		line = strings.Replace(line, e.bin+" proxy ", e.bin+" proxy -addr 127.0.0.1:"+e.ports["8080"]+" ", 1)
	}
	return line
}

// command is line, run by bash in its own process group, killed whole
// when ctx ends.
func (e *trialEnv) command(ctx context.Context, line string, out *trialOutput) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env = e.env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// trialOutput is a process's output, bounded.
type trialOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *trialOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.b.Len() < 1<<20 {
		o.b.Write(p)
	}
	return len(p), nil
}

func (o *trialOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// requireTrialTools skips, or fails under CI, when what the trial needs
// beyond Go is missing: bash, node, and the npm ci of each directory the
// README names.
func requireTrialTools(t *testing.T, dirs []string) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"bash", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" is not on PATH")
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "node_modules", ".package-lock.json")); err != nil {
			missing = append(missing, "run npm ci in "+d)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the README's trial needs: %s (CI is set, so this test may not skip)", strings.Join(missing, "; "))
		}
		t.Skipf("the README's trial needs: %s", strings.Join(missing, "; "))
	}
}

// TestREADMETrial runs the README's trial (see above) and sees what the
// README says: the TypeScript SDK client gets the 401, registers, signs
// in, is refused echo with 403 insufficient_scope naming tools:echo, steps
// up and calls it; then mcpguard audit, with the banner's token and the
// upstream, exits 0 with no MUST check failing, the PROXY-* checks of the
// upstream and the step-up checks passing, and only checks the trial
// cannot feed skipped.
func TestREADMETrial(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the README's servers and runs its client and the whole audit")
	}
	servers, clients := readmeTrial(t)
	var dirs []string
	var serverLines []string
	for _, l := range servers {
		if !strings.Contains(l, "npm ci") {
			serverLines = append(serverLines, l)
			continue
		}
		for _, m := range npmCI.FindAllStringSubmatch(l, -1) {
			dirs = append(dirs, m[1])
		}
		if rest := strings.Trim(npmCI.ReplaceAllString(l, ""), " &"); rest != "" || len(dirs) == 0 {
			t.Fatalf("README trial: %q is not \"(cd DIR && npm ci)\" joined by &&", l)
		}
	}
	if len(serverLines) != 2 || !strings.HasSuffix(serverLines[0], " &") || !strings.Contains(serverLines[1], "go run ./cmd/mcpguard proxy ") {
		t.Fatalf("README trial servers %q: want the upstream in the background, then the proxy", serverLines)
	}
	if len(clients) != 2 || !strings.Contains(clients[0], "driver.mjs") || !strings.Contains(clients[1], "go run ./cmd/mcpguard audit ") {
		t.Fatalf("README trial clients %q: want the TypeScript SDK client, then the audit", clients)
	}
	requireTrialTools(t, dirs)
	t.Parallel()

	e := &trialEnv{ports: map[string]string{}, env: os.Environ()}
	e.bin = filepath.Join(t.TempDir(), "mcpguard")
	if out, err := exec.Command("go", "build", "-o", e.bin, "./cmd/mcpguard").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mcpguard: %v\n%s", err, out)
	}
	// The ports are taken last, just before the servers bind them.
	for _, l := range slices.Concat(servers, clients) {
		for _, re := range []*regexp.Regexp{loopback, portEnv} {
			for _, m := range re.FindAllStringSubmatch(l, -1) {
				e.ports[m[1]] = ""
			}
		}
	}
	if _, ok := e.ports["8080"]; !ok {
		t.Fatalf("the README's trial never names the proxy's 127.0.0.1:8080: %q", clients)
	}
	held := heldport.New(t, len(e.ports))
	for p := range e.ports {
		_, e.ports[p], _ = net.SplitHostPort(held.Take())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// start runs a server line until the test ends and waits for want in
	// its output.
	start := func(line string, want *regexp.Regexp) string {
		t.Helper()
		line = strings.TrimSpace(strings.TrimSuffix(e.rewrite(line), "&"))
		out := &trialOutput{}
		cmd := e.command(ctx, line, out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cancel()
			<-exited
			if t.Failed() {
				t.Logf("output of %s:\n%s", line, out)
			}
		})
		deadline := time.Now().Add(trialTimeout)
		for {
			if m := want.FindStringSubmatch(out.String()); m != nil {
				return m[len(m)-1]
			}
			select {
			case <-exited:
				t.Fatalf("%s exited:\n%s", line, out)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %q within %v:\n%s", line, want, trialTimeout, out)
			}
		}
	}
	start(serverLines[0], regexp.MustCompile(`everything-host listening on 127\.0\.0\.1:\d+`))
	token := start(serverLines[1], bannerToken)
	e.env = append(e.env, "TOKEN="+token)

	// run runs a client line to its end and returns its stdout, stderr
	// and exit code.
	run := func(line string) (string, string, int) {
		t.Helper()
		line = e.rewrite(line)
		rctx, rcancel := context.WithTimeout(ctx, trialTimeout)
		defer rcancel()
		var stdout, stderr trialOutput
		cmd := e.command(rctx, line, &stdout)
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return stdout.String(), stderr.String(), code
	}

	t.Run("client", func(t *testing.T) {
		stdout, stderr, code := run(clients[0])
		var r struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
			Trace []struct {
				Method, URL     string
				Status          int
				WWWAuthenticate string `json:"wwwAuthenticate"`
			} `json:"trace"`
			Authorizations []struct{ Scope string } `json:"authorizations"`
			Call           struct {
				IsError bool   `json:"isError"`
				Text    string `json:"text"`
			} `json:"call"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || !r.OK {
			t.Fatalf("exit %d, %v, error %q\nstdout: %s\nstderr: %s", code, err, r.Error, stdout, stderr)
		}
		mcpURL := "http://127.0.0.1:" + e.ports["8080"] + "/mcp"
		var got []string
		for _, s := range r.Trace {
			switch {
			case s.URL == mcpURL && s.Method == "POST" && (s.Status == 401 || s.Status == 403):
				got = append(got, fmt.Sprintf("%d %s", s.Status, s.WWWAuthenticate))
			case strings.HasSuffix(s.URL, "/register") && s.Status == 201:
				got = append(got, "registered")
			}
		}
		prm := `resource_metadata="http://127.0.0.1:` + e.ports["8080"] + `/.well-known/oauth-protected-resource/mcp"`
		want := []string{
			`401 Bearer scope="mcp:tools", ` + prm,
			"registered",
			`403 Bearer error="insufficient_scope", scope="mcp:tools tools:echo", ` + prm + `, error_description="The operation requires additional scope"`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("refusals and registration %q, want %q", got, want)
		}
		var scopes []string
		for _, a := range r.Authorizations {
			scopes = append(scopes, a.Scope)
		}
		if !slices.Equal(scopes, []string{"mcp:tools", "mcp:tools tools:echo"}) {
			t.Errorf("authorizations with scopes %q, want mcp:tools, then the step-up to mcp:tools tools:echo", scopes)
		}
		if r.Call.IsError || r.Call.Text != "Echo: hi" {
			t.Errorf("echo after the step-up = %+v, want Echo: hi", r.Call)
		}
	})

	t.Run("audit", func(t *testing.T) {
		stdout, stderr, code := run(clients[1])
		verdicts := map[string]string{}
		var mustNotPassed []string
		for _, m := range auditRow.FindAllStringSubmatch(stdout, -1) {
			verdicts[m[1]] = m[2]
			if m[3] == "MUST" && m[2] != "PASS" {
				mustNotPassed = append(mustNotPassed, m[1]+" "+m[2])
			}
		}
		if code != 0 || len(verdicts) == 0 {
			t.Fatalf("audit exit %d (want 0: no MUST failed)\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		// What the trial cannot feed: the everything server speaks
		// 2025-11-25 only; one principal's token; no tool with a tenant
		// argument; no -assertion-key.
		cannot := []string{"TR-HEADER-MISMATCH SKIP", "TR-UNSUPPORTED-VERSION SKIP", "TR-META-MISSING SKIP",
			"SESSION-BINDING SKIP", "TENANT-FROM-TOKEN SKIP", "PROXY-UPSTREAM-AUDIENCE SKIP"}
		for _, v := range mustNotPassed {
			if !slices.Contains(cannot, v) {
				t.Errorf("audit: MUST check %s", v)
			}
		}
		for _, id := range []string{"CRED-ACCEPTED", "STEP-UP", "STEP-UP-BEFORE-EXECUTION", "STEP-UP-403-CHALLENGE",
			"PROXY-UPSTREAM-NO-IDENTITY", "PROXY-UPSTREAM-CLIENT-TOKEN", "PROXY-UPSTREAM-FORGED-ASSERTION", "PROXY-METADATA-PUBLIC-URL"} {
			if verdicts[id] != "PASS" {
				t.Errorf("audit: %s %s, want PASS", id, verdicts[id])
			}
		}
		if t.Failed() {
			t.Logf("audit:\n%s\n%s", stdout, stderr)
		}
	})
}
