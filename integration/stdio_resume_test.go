package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/ssecut"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestStdioResumeEverything: the go-sdk client's call of the reference
// everything server's long-running tool (progress each second) through
// mcpguard proxy's stdio route survives the loss of its connection after
// the first progress: the client resumes with Last-Event-ID and gets the
// tool's result (before, the proxy cancelled the request in the child,
// which then never answered).
func TestStdioResumeEverything(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	resource, issuer := newStdioClientsEnv(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}, "get-env")
	e := &env{issuer: issuer, mcpURL: resource}
	ctx := testContext(t)
	cut := &ssecut.Cutter{Marker: `"name":"trigger-long-running-operation"`, Events: 2}
	cs, rec := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: "2025-11-25", base: cut, retries: 5})
	defer func() {
		if t.Failed() {
			for _, x := range rec.exchanges() {
				t.Logf("%s %s %d", x.method, x.mcpMethod, x.status)
			}
		}
	}()
	params := callParams("trigger-long-running-operation", map[string]any{"duration": 3, "steps": 3})
	params.SetProgressToken("long-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || !strings.Contains(toolText(res), "Long running operation completed") {
		t.Fatalf("long-running operation after its connection was cut: %v %+v", err, res)
	}
	select {
	case <-cut.Cut():
	default:
		t.Fatal("the call's connection was never cut")
	}
	if got := cut.Resumptions(); !slices.Contains(got, cut.LastEventID()) {
		t.Fatalf("resumptions with Last-Event-ID %q, want one from %q, the last event before the cut", got, cut.LastEventID())
	}
}

// resumeReport is what integration/node/resume-client.mjs prints.
type resumeReport struct {
	Client           string   `json:"client"`
	ProtocolVersion  string   `json:"protocolVersion"`
	OK               bool     `json:"ok"`
	Error            string   `json:"error"`
	Progress         []int    `json:"progress"`
	ResumptionTokens []string `json:"resumptionTokens"`
	Errors           []string `json:"errors"`
	Call             *struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"call"`
}

// tapped is one JSON-RPC message a child read on its stdin.
type tapped struct {
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// tappedMessages reads the file of integration/upstreams/stdin-tap.mjs:
// the JSON-RPC messages a child read on stdin, one a line.
func tappedMessages(t *testing.T, path string) []tapped {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the child's stdin: %v", err)
	}
	var msgs []tapped
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var m tapped
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the child read %q: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// TestStdioResumeTypeScript: the TypeScript SDK clients (v1, and v2 in
// 2025-11-25) call the everything server's long-running tool (3 steps, a
// progress each second) through mcpguard proxy's stdio route and lose
// the call's connection after its priming event and progress 1: a
// reverse proxy between them cuts it (the client's connection is
// aborted mid-stream, which the SDK reports as "SSE stream
// disconnected"). The SDK's own reconnection resumes: exactly one GET
// with Last-Event-ID of the last event it got; the call ends with the
// tool's result, every progress once, and each event ID of the stream
// reported once to onresumptiontoken; the client POSTed the call once and
// the child read it once and never a cancellation (its stdin is tapped
// by integration/upstreams/stdin-tap.mjs).
//
// Both SDK lines resume a POST's stream once it had an event ID: in
// StreamableHTTPClientTransport._handleSseStream (v1:
// @modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js; v2:
// @modelcontextprotocol/client/dist/index.mjs), a stream that fails or
// ends before a response, with "isReconnectable || hasPrimingEvent",
// goes to _scheduleReconnection with the last event ID as
// resumptionToken, which _startOrAuthSse sends as Last-Event-ID on a GET.
// Stateless 2026-07-28 requests have no resumption (docs/proxy.md).
func TestStdioResumeTypeScript(t *testing.T) {
	node := requireNode(t)
	requireUpstreamsNode(t)
	t.Parallel()
	const tool = "trigger-long-running-operation"
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	tap, err := filepath.Abs(filepath.Join(upstreamsDir, "stdin-tap.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	// Each user's child reads its stdin through the tap, into its own
	// directory.
	p, _ := newDevProxy(t, []string{baseScope}, false, func(resource, issuer string) proxy.Route {
		return proxy.Route{Resource: resource, Issuers: []string{issuer}, Scopes: []string{baseScope},
			Stdio: proxy.Stdio{
				Command: []string{node, "--import", (&url.URL{Scheme: "file", Path: tap}).String(), entry, "stdio"},
				PassEnv: []string{"PATH", "HOME"}, Dir: filepath.Join(base, "{subject}"), Env: map[string]string{"STDIN_TAP_FILE": "{dir}/stdin.jsonl"},
			}}
	})
	as, resource := p.as, p.resource
	pxURL, err := url.Parse(strings.TrimSuffix(resource, "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range []string{"v1", "v2"} {
		t.Run(sdk, func(t *testing.T) {
			t.Parallel()
			subject := "resume-" + sdk
			tok, err := as.IssueToken(subject, "acme", "resume-client", resource, []string{baseScope})
			if err != nil {
				t.Fatal(err)
			}
			cut := &ssecut.Cutter{Marker: `"name":"` + tool + `"`, Events: 2}
			// The client's connection to this reverse proxy is aborted
			// when the body it copies fails at the cut.
			front := httptest.NewServer(&httputil.ReverseProxy{
				Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(pxURL) },
				Transport: cut,
				ErrorLog:  log.New(io.Discard, "", 0),
			})
			t.Cleanup(front.Close)
			ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
			defer cancel()
			out := runNode(ctx, t, node, "resume-client.mjs", "--sdk", sdk, "--url", front.URL+"/mcp", "--token", tok,
				"--tool", tool, "--args", `{"duration":3,"steps":3}`)
			var r resumeReport
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("resume-client.mjs: %v\n%s", err, out)
			}
			if !slices.ContainsFunc(r.Errors, func(e string) bool { return strings.HasPrefix(e, "SSE stream disconnected: ") }) {
				t.Errorf("%s: transport errors %q, want the SDK's \"SSE stream disconnected\" (a network drop)", r.Client, r.Errors)
			}
			if !r.OK || r.Call == nil || r.Call.IsError || r.Call.Text != "Long running operation completed. Duration: 3 seconds, Steps: 3." {
				t.Fatalf("%s: ok %v error %q call %+v", r.Client, r.OK, r.Error, r.Call)
			}
			if r.ProtocolVersion != rev20251125 {
				t.Errorf("negotiated %q, want %s", r.ProtocolVersion, rev20251125)
			}
			select {
			case <-cut.Cut():
			default:
				t.Fatal("the call's connection was never cut")
			}
			last := cut.LastEventID()
			if got := cut.Resumptions(); len(got) != 1 || got[0] != last {
				t.Errorf("GETs with Last-Event-ID %q, want exactly one, from %q (the last event before the cut)", got, last)
			}
			// The SDK got each event of the call's stream once, in order:
			// the priming event and progress 1 before the cut, progress 2,
			// 3 and the result on the resumed stream (event IDs
			// "<stream>-<seq>", docs/proxy.md).
			stream, _ := strings.CutSuffix(last, "-1")
			var want []string
			for seq := range 5 {
				want = append(want, fmt.Sprintf("%s-%d", stream, seq))
			}
			if !slices.Equal(r.ResumptionTokens, want) {
				t.Errorf("resumption tokens %q, want %q", r.ResumptionTokens, want)
			}
			if !slices.Equal(r.Progress, []int{1, 2, 3}) {
				t.Errorf("progress %v, want [1 2 3]: each once", r.Progress)
			}
			if n := cut.Marked(); n != 1 {
				t.Errorf("the client POSTed the call %d times, want 1", n)
			}
			calls, cancels := 0, 0
			for _, m := range tappedMessages(t, filepath.Join(base, subject, "stdin.jsonl")) {
				switch {
				case m.Method == "tools/call" && m.Params.Name == tool:
					calls++
				case m.Method == "notifications/cancelled":
					cancels++
				}
			}
			if calls != 1 || cancels != 0 {
				t.Errorf("the child read %d calls of %s and %d cancellations, want 1 and 0", calls, tool, cancels)
			}
		})
	}
}
