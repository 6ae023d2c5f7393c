package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cutRT cuts the connection of the answer to a call of the wait tool
// after its first two SSE events (the priming event and progress 1), as
// a network failure would, and notes the client's resumptions (GET with
// Last-Event-ID).
type cutRT struct {
	rt      http.RoundTripper
	cut     chan struct{}
	once    sync.Once
	resumed atomic.Int32
}

func (c *cutRT) RoundTrip(r *http.Request) (*http.Response, error) {
	wait := false
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		wait = bytes.Contains(body, []byte(`"name":"wait"`))
	}
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		c.resumed.Add(1)
	}
	resp, err := c.rt.RoundTrip(r)
	if err == nil && wait {
		resp.Body = &cutBody{rc: resp.Body, br: bufio.NewReader(resp.Body), c: c}
	}
	return resp, err
}

// cutBody passes lines on until two events have ended, then closes the
// connection and fails.
type cutBody struct {
	rc      io.ReadCloser
	br      *bufio.Reader
	c       *cutRT
	pending []byte
	events  int
	cut     bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.cut {
			return 0, io.ErrUnexpectedEOF
		}
		line, err := b.br.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		b.pending = line
		if len(bytes.TrimSpace(line)) == 0 {
			if b.events++; b.events == 2 {
				b.cut = true
				b.rc.Close()
				b.c.once.Do(func() { close(b.c.cut) })
			}
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *cutBody) Close() error { return b.rc.Close() }

// TestStdioResume: the go-sdk client's call of a slow tool through the
// proxy to a stdio server survives the loss of its connection mid-call:
// the client resumes with Last-Event-ID and gets its result, and the
// child never saw a cancellation.
func TestStdioResume(t *testing.T) {
	e := stdioEnv(t, "")
	ctx := testContext(t)
	rt := &cutRT{rt: bearerRT{e.token(t, "alice", baseScope), nil}, cut: make(chan struct{})}
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource, HTTPClient: &http.Client{Transport: rt}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"n": 2}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, params)
		done <- result{res, err}
	}()
	select {
	case <-rt.cut:
	case r := <-done:
		t.Fatalf("the call ended before its connection was cut: %+v", r)
	case <-ctx.Done():
		t.Fatal("no cut")
	}
	if got, err := toolText(ctx, cs, "release"); err != nil || got != `{"text":"ok"}` {
		t.Fatalf("release = %q, %v", got, err)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("no result after the cut")
	}
	if r.err != nil || r.res.IsError || r.res.Content[0].(*mcp.TextContent).Text != `{"text":"released"}` {
		t.Fatalf("wait after the cut: %+v, %v", r.res, r.err)
	}
	if rt.resumed.Load() == 0 {
		t.Error("the client never resumed with Last-Event-ID")
	}
	if got, err := toolText(ctx, cs, "cancelled"); err != nil || got != `{"text":"0"}` {
		t.Errorf("cancelled = %q, %v: the child saw a cancellation", got, err)
	}
}
