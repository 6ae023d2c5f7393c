package integration

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// cutOnce cuts the connection of the first answer to a POST whose body
// holds marker after its first two SSE events (the priming event and the
// first message), as a network failure would, and counts the client's
// resumptions (GET with Last-Event-ID).
type cutOnce struct {
	marker  string
	used    atomic.Bool
	resumed atomic.Int32
}

func (c *cutOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	cut := false
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		cut = bytes.Contains(body, []byte(c.marker)) && c.used.CompareAndSwap(false, true)
	}
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		c.resumed.Add(1)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && cut {
		resp.Body = &cutBody{rc: resp.Body, br: bufio.NewReader(resp.Body)}
	}
	return resp, err
}

// cutBody passes lines on until two events have ended, then closes the
// connection and fails.
type cutBody struct {
	rc      io.ReadCloser
	br      *bufio.Reader
	pending []byte
	events  int
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.events == 2 {
			return 0, io.ErrUnexpectedEOF
		}
		line, err := b.br.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		b.pending = line
		if len(bytes.TrimSpace(line)) == 0 {
			if b.events++; b.events == 2 {
				b.rc.Close() // the connection goes
			}
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *cutBody) Close() error { return b.rc.Close() }

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
	cut := &cutOnce{marker: `"name":"trigger-long-running-operation"`}
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
	if !cut.used.Load() || cut.resumed.Load() == 0 {
		t.Fatalf("cut %v, resumptions %d: want a cut and a resumption", cut.used.Load(), cut.resumed.Load())
	}
}
