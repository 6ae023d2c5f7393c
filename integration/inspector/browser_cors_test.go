package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// corsRun is what integration/inspector/cors.mjs prints.
type corsRun struct {
	Page *struct {
		Steps          []string `json:"steps"`
		Authorizations []string `json:"authorizations"`
		Challenges     []string `json:"challenges"`
		SessionIDs     []string `json:"sessionIds"`
		Result         *struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Note struct {
					Text   string `json:"text"`
					Author string `json:"author"`
				} `json:"note"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error string `json:"error"`
	} `json:"page"`
	Requests []struct {
		Type   string `json:"type"`
		Method string `json:"method"`
		URL    string `json:"url"`
		Status int    `json:"status"`
		Origin string `json:"origin"`
		// RequestHeaders is a preflight's Access-Control-Request-Headers.
		RequestHeaders string `json:"requestHeaders"`
	} `json:"requests"`
	Console []string `json:"console"`
	Error   string   `json:"error"`
}

// TestBrowserCORS is a browser-based MCP client in Debian's headless
// chromium: the Inspector's web UI proxies every request but /authorize
// through its backend (see TestInspectorBrowser), so this test serves a
// page of its own (integration/inspector/cors.html, plain fetch()) on
// another loopback origin and starts the example with -allowed-origins
// for it. The browser enforces CORS for real: the page's MCP POSTs
// (Content-Type application/json, MCP-Protocol-Version, Authorization,
// Mcp-Session-Id or Mcp-Method and Mcp-Name) are preflighted; it reads
// WWW-Authenticate of the 401 and of the 403 insufficient_scope and
// Mcp-Session-Id only because they are exposed; it discovers the
// protected-resource and authorization-server metadata cross-origin
// (preflighted, MCP-Protocol-Version), registers (preflighted JSON POST),
// authorizes by navigation and comes back with the code, redeems it (a
// CORS-safelisted form POST, no preflight), calls notes_write, steps up
// on the 403 with a second authorization and calls again. The driver
// (cors.mjs) records the browser's requests, preflights included, over
// the DevTools protocol. Both protocol eras.
func TestBrowserCORS(t *testing.T) {
	node, _ := requireInspector(t)
	requireChromium(t)
	t.Parallel()
	html, err := os.ReadFile(filepath.Join(inspectorDir, "cors.html"))
	if err != nil {
		t.Fatal(err)
	}
	pageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(html)
	}))
	t.Cleanup(pageSrv.Close)
	pageOrigin := pageSrv.URL
	bin := exampleBinary(t)
	stateless := startExample(t, bin, nil, "-allowed-origins", pageOrigin)
	stateful := startExample(t, bin, nil, "-allowed-origins", pageOrigin, "-stateful")
	for _, run := range []struct {
		name, era string
		ex        *example
	}{
		{"legacy", "legacy", stateless},
		{"modern", "modern", stateless},
		{"legacy stateful", "legacy", stateful},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			ex := run.ex
			mcp, err := url.Parse(ex.mcpURL)
			if err != nil {
				t.Fatal(err)
			}
			mcpOrigin := mcp.Scheme + "://" + mcp.Host
			metaURL := mcpOrigin + "/.well-known/oauth-protected-resource" + mcp.Path
			note := "hello from a page, " + run.name
			q := url.Values{"era": {run.era}, "mcp": {ex.mcpURL}, "note": {note}}
			ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(inspectorDir, "cors.mjs"))
			cmd.Env = append(os.Environ(),
				"PAGE_URL="+pageOrigin+"/?"+q.Encode(),
				"CHROMIUM="+chromiumPath,
				"USER_DATA_DIR="+t.TempDir(),
				fmt.Sprintf("STEP_TIMEOUT_MS=%d", browserStepTimeout.Milliseconds()))
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
			cmd.WaitDelay = 15 * time.Second
			var stderr syncBuf
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			var r corsRun
			if jerr := json.Unmarshal(stdout, &r); jerr != nil {
				t.Fatalf("driver: %v, output %q (%v)\nstderr: %s", err, stdout, jerr, &stderr)
			}
			if err != nil || r.Error != "" || r.Page == nil || r.Page.Error != "" {
				t.Fatalf("driver: %v %s\npage: %+v\nrequests: %+v\nconsole: %q\nstderr: %s", err, r.Error, r.Page, r.Requests, r.Console, &stderr)
			}
			p := r.Page
			check := func(name string, ok bool, format string, args ...any) {
				t.Helper()
				if !ok {
					t.Errorf("%s: "+format, append([]any{name}, args...)...)
				}
			}
			wantSteps := []string{"401", "discovered", "registered", "redirected back", "token " + baseScope}
			if run.era == "legacy" {
				wantSteps = append(wantSteps, "initialized")
			}
			wantSteps = append(wantSteps, "403", "redirected back", "token "+baseScope+" notes:write", "notes_write")
			check("steps", slices.Equal(p.Steps, wantSteps), "%q, want %q", p.Steps, wantSteps)
			// The challenges, read through Access-Control-Expose-Headers.
			wantChallenges := []string{
				`401 Bearer scope="` + baseScope + `", resource_metadata="` + metaURL + `"`,
				`403 Bearer error="insufficient_scope", scope="` + baseScope + ` notes:write", resource_metadata="` + metaURL + `", error_description="The operation requires additional scope"`,
			}
			check("challenges", slices.Equal(p.Challenges, wantChallenges), "%q, want %q", p.Challenges, wantChallenges)
			check("authorizations", slices.Equal(p.Authorizations, []string{baseScope, baseScope + " notes:write"}), "%q", p.Authorizations)
			if run.era == "legacy" {
				// Only the stateful server opens a session.
				check("Mcp-Session-Id", len(p.SessionIDs) == 1 && (p.SessionIDs[0] != "") == (ex == stateful), "%q", p.SessionIDs)
			}
			check("notes_write", p.Result != nil && !p.Result.IsError && p.Result.StructuredContent.Note.Text == note &&
				p.Result.StructuredContent.Note.Author == "dev-user", "%+v", p.Result)

			// What the browser sent cross-origin, in order: each request
			// the page made with fetch() to the example and its
			// authorization server, and the two authorization navigations;
			// and, apart (the browser sends them concurrently with what
			// went before), the preflights (OPTIONS from the page's origin)
			// of the non-simple ones.
			var sent, preflights []string
			rel := strings.NewReplacer(mcpOrigin, "MCP", ex.issuer, "AS")
			for _, req := range r.Requests {
				if strings.HasPrefix(req.URL, pageOrigin) {
					continue
				}
				line := fmt.Sprintf("%s %s %d", req.Method, rel.Replace(req.URL), req.Status)
				if req.Type != "Preflight" {
					sent = append(sent, req.Type+" "+line)
					continue
				}
				check("preflight origin", req.Origin == pageOrigin, "%s: Origin %q", line, req.Origin)
				preflights = append(preflights, line+" "+req.RequestHeaders)
			}
			slices.Sort(preflights)
			wantSent, wantPreflights := corsWant(run.era, ex == stateful)
			check("requests", slices.Equal(sent, wantSent), "\n%s\nwant\n%s", strings.Join(sent, "\n"), strings.Join(wantSent, "\n"))
			check("preflights", slices.Equal(preflights, wantPreflights), "\n%s\nwant\n%s", strings.Join(preflights, "\n"), strings.Join(wantPreflights, "\n"))
			t.Logf("| chromium, plain fetch() | %s | %d requests, %d preflights | %s |", run.name, len(sent), len(preflights), strings.Join(p.Steps, ", "))
		})
	}
}

// corsWant is the browser's cross-origin traffic of one TestBrowserCORS
// run, URLs relative to the example (MCP) and its authorization server
// (AS): the requests in order, and the preflights sorted, each with the
// Access-Control-Request-Headers chromium sent. The token request (a form
// POST) is the one non-navigation without a preflight.
func corsWant(era string, session bool) (sent, preflights []string) {
	mcpPOST := func(status int) string { return fmt.Sprintf("Fetch POST MCP/mcp %d", status) }
	discovery := []string{
		"Fetch GET MCP/.well-known/oauth-protected-resource/mcp 200",
		"Fetch GET AS/.well-known/oauth-authorization-server 200",
		"Fetch POST AS/register 201",
		"Document GET AS/authorize 302",
		"Fetch POST AS/token 200",
	}
	stepUp := []string{"Document GET AS/authorize 302", "Fetch POST AS/token 200"}
	preflights = []string{
		"OPTIONS AS/.well-known/oauth-authorization-server 204 mcp-protocol-version",
		"OPTIONS AS/register 204 content-type",
		"OPTIONS MCP/.well-known/oauth-protected-resource/mcp 204 mcp-protocol-version",
	}
	mcpPreflight := func(headers string, n int) {
		for range n {
			preflights = append(preflights, "OPTIONS MCP/mcp 204 "+headers)
		}
	}
	if era == "modern" {
		// tools/call at once: 401, 403, 200.
		sent = slices.Concat([]string{mcpPOST(401)}, discovery, []string{mcpPOST(403)}, stepUp, []string{mcpPOST(200)})
		mcpPreflight("authorization,content-type,mcp-method,mcp-name,mcp-protocol-version", 2)
		mcpPreflight("content-type,mcp-method,mcp-name,mcp-protocol-version", 1)
		return sent, preflights
	}
	// initialize (401, then 200), notifications/initialized (202),
	// tools/call (403, 200); with a session, the requests after
	// initialize carry Mcp-Session-Id.
	sent = slices.Concat([]string{mcpPOST(401)}, discovery, []string{mcpPOST(200), mcpPOST(202), mcpPOST(403)}, stepUp, []string{mcpPOST(200)})
	if session {
		mcpPreflight("authorization,content-type,mcp-protocol-version", 1)
		mcpPreflight("authorization,content-type,mcp-protocol-version,mcp-session-id", 3)
	} else {
		mcpPreflight("authorization,content-type,mcp-protocol-version", 4)
	}
	mcpPreflight("content-type,mcp-protocol-version", 1)
	return sent, preflights
}
