package inspector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/heldport"
)

// inspectorDir, this package's directory, holds the MCP Inspector's
// package.json and lockfile, with Node 22 from the npm node package (the
// Inspector needs Node >= 22.19).
const inspectorDir = "."

const inspectorInstallHint = "run `npm ci` in integration/inspector (.ci/run does)"

// inspectorTimeout bounds one Inspector CLI run (one method, with its
// authorizations).
const inspectorTimeout = 60 * time.Second

// requireInspector returns the Node 22 binary and the Inspector's entry
// point, or skips (fails when CI is set) when they are not installed.
func requireInspector(t *testing.T) (node, inspector string) {
	t.Helper()
	node = filepath.Join(inspectorDir, "node_modules", ".bin", "node")
	inspector = filepath.Join(inspectorDir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	for _, f := range []string{node, inspector} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (CI is set, so this test may not skip): %s", f, inspectorInstallHint)
			}
			t.Skipf("%s is missing: %s", f, inspectorInstallHint)
		}
	}
	abs, err := filepath.Abs(node)
	if err != nil {
		t.Fatal(err)
	}
	return abs, inspector
}

// inspectorRun is one Inspector CLI run: its output and the authorizations
// it asked for.
type inspectorRun struct {
	exit           int
	stdout, stderr string
	// scopes are the scope parameters of the authorization requests the
	// CLI printed (and the test, as the user's browser, followed).
	scopes []string
}

// inspectorCLI runs the Inspector CLI against one server entry of a
// session config, with its own home directory (stored OAuth state), as a
// user at a terminal would: each authorization URL it prints is opened by
// a browser stand-in that follows the development authorization server's
// redirects (it approves at once) to the CLI's loopback callback, and a
// step-up question is answered "y".
type inspectorCLI struct {
	node, inspector string
	home, config    string
	callback        string
}

func newInspectorCLI(t *testing.T, node, inspector, mcpURL, scopes string) *inspectorCLI {
	t.Helper()
	home := t.TempDir()
	entry := map[string]any{"type": "streamable-http", "url": mcpURL}
	if scopes != "" {
		entry["oauth"] = map[string]any{"scopes": scopes}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"example": entry}})
	config := filepath.Join(home, "session.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A free loopback port for the CLI's OAuth callback listener, outside
	// the ephemeral range (an outgoing connection cannot take it meanwhile).
	return &inspectorCLI{node: node, inspector: inspector, home: home, config: config,
		callback: "http://" + heldport.New(t, 1).Take() + "/oauth/callback"}
}

// run runs `mcp-inspector --cli` with args for the server entry.
func (c *inspectorCLI) run(t *testing.T, era string, args ...string) *inspectorRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), inspectorTimeout)
	defer cancel()
	all := append([]string{c.inspector, "--cli", "--config", c.config, "--server", "example", "--protocol-era", era,
		"--format", "json", "--callback-url", c.callback}, args...)
	cmd := exec.CommandContext(ctx, c.node, all...)
	cmd.Env = append(os.Environ(), "HOME="+c.home,
		"MCP_AUTO_OPEN_ENABLED=true",      // print the authorization URL instead of refusing without a TTY
		"MCP_INSPECTOR_SECRET_STORE=file", // tokens kept in HOME between runs, not in an OS keychain
		"NO_COLOR=1")
	cmd.Stdin = strings.NewReader("y\n") // "Proceed with step-up authorization? [y/N]"
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start inspector: %v", err)
	}
	r := &inspectorRun{}
	var stderr strings.Builder
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			stderr.WriteString(line + "\n")
			_, u, ok := strings.Cut(line, "Please navigate to: ")
			if !ok {
				continue
			}
			au, err := url.Parse(strings.TrimSpace(u))
			if err != nil {
				continue
			}
			mu.Lock()
			r.scopes = append(r.scopes, au.Query().Get("scope"))
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := followAuthorization(ctx, au.String()); err != nil {
					mu.Lock()
					stderr.WriteString("browser stand-in: " + err.Error() + "\n")
					mu.Unlock()
				}
			}()
		}
	}()
	<-done
	err = cmd.Wait()
	wg.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("inspector: %v", err)
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

// followAuthorization is the user's browser: it GETs the authorization URL
// and follows redirects to the callback, which the CLI's listener answers.
func followAuthorization(ctx context.Context, u string) error {
	cl := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/oauth/callback") {
		return fmt.Errorf("authorization ended at %s with %d", resp.Request.URL.Redacted(), resp.StatusCode)
	}
	return nil
}

// inspectorTools reads a tools/list result as "name=type[scopes]".
func inspectorTools(t *testing.T, r *inspectorRun) []string {
	t.Helper()
	var out struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
				Meta struct {
					Schemes []struct {
						Type   string   `json:"type"`
						Scopes []string `json:"scopes"`
					} `json:"securitySchemes"`
				} `json:"_meta"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("tools/list output %q: %v", r.stdout, err)
	}
	var names []string
	for _, tool := range out.Result.Tools {
		n := tool.Name
		for _, s := range tool.Meta.Schemes {
			n += "=" + s.Type + fmt.Sprint(s.Scopes)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestInspectorCLI runs the MCP Inspector CLI (2.12.0, from
// integration/inspector's lockfile, on Node 22) against the example in
// its default configuration, as a new user would, in both protocol eras:
// tools/list, then tools/call of notes_write and of notes_list, each a
// separate CLI run sharing its stored authorization. The CLI refuses to
// call a tool tools/list did not offer ("Tool 'notes_write' not found on
// server.", exit 5), so the example must list every tool a client could
// obtain (annotate). Two paths:
//
//   - "scopes_supported": with no scope configured, the CLI asks for every
//     scopes_supported entry up front: one authorization, no 403.
//   - "least privilege": with the server entry's oauth.scopes set to the
//     first challenge's scope (mcp:tools), each notes call gets a 403
//     insufficient_scope, the CLI asks to step up (answered y), authorizes
//     again with the challenge's scopes and retries: three authorizations.
func TestInspectorCLI(t *testing.T) {
	node, inspector := requireInspector(t)
	t.Parallel()
	bin := exampleBinary(t)
	ex := startExample(t, bin, nil)
	for _, era := range []string{"legacy", "modern"} {
		for _, path := range []struct {
			name, scopes string
			auths        [][]string // the scopes of the authorizations of each run
		}{
			{"scopes_supported", "", [][]string{{"mcp:tools notes:read notes:write"}, nil, nil}},
			{"least privilege", baseScope, [][]string{{baseScope}, {baseScope + " notes:write"}, {baseScope + " notes:write notes:read"}}},
		} {
			t.Run(era+"/"+path.name, func(t *testing.T) {
				t.Parallel()
				cli := newInspectorCLI(t, node, inspector, ex.mcpURL, path.scopes)
				var steps []string
				check := func(i int, name string, r *inspectorRun, ok bool) {
					t.Helper()
					if !ok || r.exit != 0 {
						t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", name, r.exit, r.stdout, r.stderr)
					}
					wantScopes := path.auths[i]
					if !slices.Equal(r.scopes, wantScopes) {
						t.Errorf("%s: authorizations with scopes %q, want %q", name, r.scopes, wantScopes)
					}
					steps = append(steps, fmt.Sprintf("%s: %d authorization(s) %q", name, len(r.scopes), r.scopes))
				}
				list := cli.run(t, era, "--method", "tools/list")
				check(0, "tools/list", list, list.exit == 0 && slices.Equal(inspectorTools(t, list), annotatedTools))
				if list.exit == 0 {
					if got := inspectorTools(t, list); !slices.Equal(got, annotatedTools) {
						t.Errorf("tools/list = %q, want %q", got, annotatedTools)
					}
				}
				// The CLI says so when a call got the 403 insufficient_scope.
				stepUp := func(r *inspectorRun, scope string) bool {
					return strings.Contains(r.stderr, "This operation needs additional scope: "+scope) == (path.scopes != "")
				}
				write := cli.run(t, era, "--method", "tools/call", "--tool-name", "notes_write", "--tool-arg", "text=hello from the inspector")
				check(1, "notes_write", write, strings.Contains(write.stdout, `"text":"hello from the inspector"`) && !strings.Contains(write.stdout, `"isError":true`) &&
					stepUp(write, "notes:write"))
				read := cli.run(t, era, "--method", "tools/call", "--tool-name", "notes_list")
				check(2, "notes_list", read, strings.Contains(read.stdout, `hello from the inspector`) && !strings.Contains(read.stdout, `"isError":true`) &&
					stepUp(read, "notes:read"))
				t.Logf("| Inspector CLI 2.12.0 | %s | %s | %s |", era, path.name, strings.Join(steps, " | "))
			})
		}
	}
}
