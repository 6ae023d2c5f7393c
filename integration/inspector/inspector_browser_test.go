package inspector

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/heldport"
)

// chromiumPath is Debian's chromium (apt-get install chromium); no test
// uses a browser that a tool downloaded.
const chromiumPath = "/usr/bin/chromium"

const chromiumInstallHint = "apt-get install --no-install-recommends chromium (.ci/run does)"

// browserTimeout bounds one browser run (connect, authorize, list, call,
// step up, call again): about 40 s on an idle 2-core machine, a minute or
// more at load average 10.
const browserTimeout = 5 * time.Minute

// browserStepTimeout bounds each wait of the driver (a page, a button, an
// answer), well above the longest step seen under load (about 20 s).
const browserStepTimeout = 90 * time.Second

// requireChromium skips the test when Debian's chromium or puppeteer-core
// is missing, or fails it when CI is set.
func requireChromium(t *testing.T) {
	t.Helper()
	for f, hint := range map[string]string{
		chromiumPath: chromiumInstallHint,
		filepath.Join(inspectorDir, "node_modules", "puppeteer-core", "package.json"): inspectorInstallHint,
	} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (CI is set, so this test may not skip): %s", f, hint)
			}
			t.Skipf("%s is missing: %s", f, hint)
		}
	}
}

// startInspectorWeb starts the Inspector's web UI (the same npm package as
// the CLI) for one server and protocol era, with its own home directory
// (stored OAuth state and secrets), and returns the page's address with
// its API token. The web UI needs a fixed port (CLIENT_PORT; 0 is
// refused): one outside the ephemeral range is picked (heldport) and, if
// another process takes it first, another, up to three times.
func startInspectorWeb(t *testing.T, node, inspector, mcpURL, era string) string {
	t.Helper()
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	var log syncBuf
	for attempt := range 3 {
		_, port, _ := net.SplitHostPort(heldport.New(t, 1).Take())
		cmd := exec.Command(node, inspector, "--web", "--transport", "http", "--server-url", mcpURL, "--protocol-era", era)
		cmd.Env = append(os.Environ(), "HOME="+home,
			"CLIENT_PORT="+port,
			"MCP_SANDBOX_PORT=0", "MCP_APP_ORIGIN_PORT=0", // OS-assigned: the MCP Apps sandbox is not used
			"MCP_INSPECTOR_API_TOKEN="+hex.EncodeToString(token),
			"MCP_AUTO_OPEN_ENABLED=false", // the test opens the page in its own browser
			"MCP_INSPECTOR_SECRET_STORE=file",
			"NO_COLOR=1")
		pr, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = &log
		if err := cmd.Start(); err != nil {
			t.Fatalf("start inspector web: %v", err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintln(&log, line)
				if strings.Contains(line, "MCP Inspector Web is up and running") {
					ready <- true
				}
			}
			ready <- false
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		stop := func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		select {
		case ok := <-ready:
			if ok {
				t.Cleanup(func() {
					stop()
					if t.Failed() {
						t.Logf("inspector web output:\n%s", &log)
					}
				})
				return "http://127.0.0.1:" + port + "/?MCP_INSPECTOR_API_TOKEN=" + hex.EncodeToString(token)
			}
			stop()
			if !strings.Contains(log.String(), "PORT IS IN USE") {
				t.Fatalf("inspector web exited before it was ready:\n%s", &log)
			}
			t.Logf("attempt %d: port %s was taken, trying another", attempt+1, port)
		case <-time.After(60 * time.Second):
			stop()
			t.Fatalf("inspector web not ready after 60s:\n%s", &log)
		}
	}
	t.Fatalf("inspector web found no free port:\n%s", &log)
	return ""
}

// browserRun is what integration/inspector/browser.mjs prints.
type browserRun struct {
	Steps          []string `json:"steps"`
	Authorizations []string `json:"authorizations"`
	CrossOrigin    []string `json:"crossOrigin"`
	Tools          []string `json:"tools"`
	Protocol       string   `json:"protocol"`
	Version        string   `json:"version"`
	StepUpDialog   string   `json:"stepUpDialog"`
	StepUpNotice   string   `json:"stepUpNotice"`
	FieldRestored  string   `json:"fieldRestored"`
	Result         *struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Note struct {
				Text   string `json:"text"`
				Author string `json:"author"`
			} `json:"note"`
			Tenant string `json:"tenant"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error string `json:"error"`
	Page  string `json:"page"`
	// For the diagnosis of a failure.
	URL         string   `json:"url"`
	Navigations []string `json:"navigations"`
	Console     []string `json:"console"`
	Notices     []string `json:"notices"`
}

// TestInspectorBrowser drives the MCP Inspector's web UI (2.12.0, from
// integration/inspector's lockfile, on Node 22) in Debian's headless
// chromium with puppeteer-core, against the example in its default
// configuration, in both protocol eras, as a server author trying the
// server would: connect (401, discovery, registration; the browser goes
// to the development authorization server's /authorize and back to the
// Inspector's /oauth/callback with the code), open the tools (all three,
// each with the scopes of its SEP-1488 securitySchemes, as the UI's
// protocol view shows the tools/list answer), call notes_write. The UI
// authorized with the first challenge's scope (mcp:tools), so the call
// gets the 403 insufficient_scope; the UI offers a step-up, the browser
// authorizes again with mcp:tools notes:write, and back on the tool the
// field typed before the redirect is restored: it is cleared, the text
// retyped, and the call succeeds. A screenshot of the final state is kept
// as a test artifact (go test -artifacts -outputdir DIR).
//
// The Inspector's page makes no cross-origin request of its own: MCP
// requests, discovery, registration and the token request go through its
// local backend (/api/mcp/*, /api/fetch), and only /authorize is opened
// in the browser, so the example needs no -allowed-origins for it; 2.12.0
// has no direct connection mode. TestBrowserCORS makes the browser do the
// cross-origin requests.
func TestInspectorBrowser(t *testing.T) {
	node, inspector := requireInspector(t)
	requireChromium(t)
	t.Parallel()
	bin := exampleBinary(t)
	ex := startExample(t, bin, nil)
	for _, era := range []struct{ name, badge, version string }{
		{"legacy", "LEGACY", "2025-11-25"},
		{"modern", "MODERN", "2026-07-28"},
	} {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			page := startInspectorWeb(t, node, inspector, ex.mcpURL, era.name)
			screenshot := filepath.Join(t.ArtifactDir(), "inspector-"+era.name+".png")
			note := "hello from chromium, " + era.name + " era"
			ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(inspectorDir, "browser.mjs"))
			cmd.Env = append(os.Environ(),
				"INSPECTOR_URL="+page,
				"CHROMIUM="+chromiumPath,
				"NOTE_TEXT="+note,
				"SCREENSHOT="+screenshot,
				"USER_DATA_DIR="+t.TempDir(),
				fmt.Sprintf("STEP_TIMEOUT_MS=%d", browserStepTimeout.Milliseconds()))
			// puppeteer closes chromium on SIGINT; chromium also exits when
			// its pipe to the driver closes.
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
			cmd.WaitDelay = 15 * time.Second
			var stderr syncBuf
			cmd.Stderr = &stderr
			start := time.Now()
			stdout, err := cmd.Output()
			elapsed := time.Since(start)
			var r browserRun
			if jerr := json.Unmarshal(stdout, &r); jerr != nil {
				t.Fatalf("driver: %v, output %q (%v)\nstderr: %s", err, stdout, jerr, &stderr)
			}
			t.Logf("screenshot: %s (%s)", screenshot, elapsed.Round(time.Second))
			if r.Error != "" || err != nil {
				t.Fatalf("driver failed after steps %q: %v %s\npage %s, text:\n%s\nnavigations: %q\nauthorizations: %q\nnotifications: %q\nconsole, failed requests, answers >= 400:\n%s\nstderr: %s",
					r.Steps, err, r.Error, r.URL, r.Page, r.Navigations, r.Authorizations, r.Notices, strings.Join(r.Console, "\n"), &stderr)
			}
			check := func(name string, ok bool, format string, args ...any) {
				t.Helper()
				if !ok {
					t.Errorf("%s: "+format, append([]any{name}, args...)...)
				}
			}
			check("era", r.Protocol == era.badge && r.Version == era.version, "protocol view %q, server card MCP %q", r.Protocol, r.Version)
			check("tools/list", slices.Equal(r.Tools, annotatedTools), "%q, want %q", r.Tools, annotatedTools)
			check("authorizations", slices.Equal(r.Authorizations, []string{baseScope, baseScope + " notes:write"}), "scopes %q", r.Authorizations)
			check("step-up dialog", strings.Contains(r.StepUpDialog, "This operation needs additional scope: notes:write."), "%q", r.StepUpDialog)
			check("notes_write", r.Result != nil && !r.Result.IsError && r.Result.StructuredContent.Note.Text == note &&
				r.Result.StructuredContent.Note.Author == "dev-user", "result %+v", r.Result)
			// The page's own requests to the example and its authorization
			// server: only the two /authorize navigations.
			mcp, err := url.Parse(ex.mcpURL)
			if err != nil {
				t.Fatal(err)
			}
			var own []string
			for _, req := range r.CrossOrigin {
				_, u, _ := strings.Cut(req, " GET ")
				if strings.HasPrefix(u, ex.issuer+"/") || strings.HasPrefix(u, mcp.Scheme+"://"+mcp.Host+"/") || !strings.Contains(req, " GET ") {
					own = append(own, req)
				}
			}
			wantOwn := []string{"document GET " + ex.issuer + "/authorize", "document GET " + ex.issuer + "/authorize"}
			check("page requests", slices.Equal(own, wantOwn), "%q, want %q", own, wantOwn)
			t.Logf("| Inspector web UI 2.12.0 (chromium) | %s | authorizations %q | field after the redirect %q | %s |",
				era.name, r.Authorizations, r.FieldRestored, strings.Join(r.Steps, ", "))
		})
	}
}
