package proxy_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/heldport"
	"github.com/mcpguard/mcpguard/proxy"
)

const callBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`

// rawEnv is a test env whose upstream is handler h (no MCP SDK).
func rawEnv(t *testing.T, h http.HandlerFunc, cfg func(c *proxy.Config)) (*testEnv, http.Header) {
	t.Helper()
	e := newTestEnv(t, envOptions{
		upstream: func(*testing.T, string, string, string) http.Handler { return h },
		cfg:      cfg,
	})
	return e, http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return string(b)
}

// TestUpstreamFailures: an upstream that is down, slow, failing or
// refusing the proxy's identity gets the client a JSON-RPC-shaped answer
// with the request's id, the status of the table in docs/proxy.md, and no
// upstream detail.
func TestUpstreamFailures(t *testing.T) {
	tests := []struct {
		name       string
		h          http.HandlerFunc
		status     int
		retryAfter string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "panic: secret stack trace at /srv/app.go:12", 500)
		}, 502, ""},
		{"502", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }, 502, ""},
		{"503 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			http.Error(w, "secret maintenance", http.StatusServiceUnavailable)
		}, 503, "7"},
		{"503 with a date", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
			w.WriteHeader(503)
		}, 503, ""},
		{"401 refusing the assertion", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://secret-upstream/.well-known/x"`)
			w.WriteHeader(401)
		}, 502, ""},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that net/http notices the proxy leaving
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, 504, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, auth := rawEnv(t, tt.h, func(c *proxy.Config) { c.Timeouts.ResponseHeader = 300 * time.Millisecond })
			resp := do(t, "POST", e.resource, callBody, auth)
			body := readAll(t, resp)
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"%s"}}`+"\n", http.StatusText(tt.status))
			if resp.StatusCode != tt.status || body != want || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("answer = %d %q %q, want %d %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, want)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if h := resp.Header.Get("Www-Authenticate"); h != "" {
				t.Errorf("WWW-Authenticate = %q", h)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		// Nothing listens there: a port outside the ephemeral range
		// (heldport), which no outgoing connection or port-0 listener is
		// given meanwhile.
		dead := "http://" + heldport.New(t, 1).Take() + "/mcp"
		e := newTestEnv(t, envOptions{route: func(r *proxy.Route) { r.Upstream = dead }})
		resp := do(t, "GET", e.resource, "", http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}, "Accept": {"text/event-stream"}})
		body := readAll(t, resp)
		if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Bad Gateway"}}` + "\n"; resp.StatusCode != 502 || body != want {
			t.Errorf("answer = %d %q, want 502 %q", resp.StatusCode, body, want)
		}
		resp = do(t, "GET", e.proxyURL+"/readyz", "", nil)
		if body := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(body, `"upstream_reachable":false`) {
			t.Errorf("readyz = %d %s", resp.StatusCode, body)
		}
	})
}

// sseUpstream serves a GET event stream and POST answers as SSE; next
// receives nothing until the test sends on it, so the client can only
// see an event the proxy flushed at once.
type sseUpstream struct {
	next      chan struct{}
	gone      chan struct{} // closed when a stream's request context ends
	lastID    atomic.Value
	method    atomic.Value
	body      atomic.Value
	killConn  bool
	silence   time.Duration // how long it waits for next before it ends the stream itself; zero means 10 s
	selfEnded atomic.Bool   // set before it ends a stream after silence
}

func (u *sseUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.method.Store(r.Method)
	u.lastID.Store(r.Header.Get("Last-Event-ID"))
	b, _ := io.ReadAll(r.Body)
	u.body.Store(string(b))
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	defer func() {
		select {
		case <-u.gone:
		default:
			if r.Context().Err() != nil {
				close(u.gone)
			}
		}
	}()
	for i := 1; i <= 3; i++ {
		select {
		case <-u.next:
		case <-r.Context().Done():
			<-r.Context().Done()
			return
		case <-time.After(cmp.Or(u.silence, 10*time.Second)):
			u.selfEnded.Store(true)
			return
		}
		fmt.Fprintf(w, "id: %d\ndata: {\"n\":%d}\n\n", i, i)
		w.(http.Flusher).Flush()
		if u.killConn && i == 2 {
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
			return
		}
	}
}

// readEvent reads one SSE event (up to its blank line).
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event: %v (so far %q)", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

// TestStreaming: each SSE event reaches the client as soon as the
// upstream sends it (the upstream sends the next only after the client
// read the previous one), Last-Event-ID of an event the client was sent
// and DELETE pass (one it was not sent is 400: docs/sessions.md,
// "Resumption"), and the body arrives byte for byte.
func TestStreaming(t *testing.T) {
	u := &sseUpstream{next: make(chan struct{}), gone: make(chan struct{})}
	e, auth := rawEnv(t, u.ServeHTTP, nil)
	stream := func(lastID string) {
		t.Helper()
		hdr := auth.Clone()
		hdr.Set("Accept", "text/event-stream")
		if lastID != "" {
			hdr.Set("Last-Event-ID", lastID)
		}
		resp := do(t, "GET", e.resource, "", hdr)
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		br := bufio.NewReader(resp.Body)
		for i := 1; i <= 3; i++ {
			select {
			case u.next <- struct{}{}:
			case <-time.After(30 * time.Second):
				t.Fatal("upstream not waiting")
			}
			if ev, want := readEvent(t, br), fmt.Sprintf("id: %d\ndata: {\"n\":%d}\n", i, i); ev != want {
				t.Fatalf("event %d = %q, want %q", i, ev, want)
			}
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("after the last event: %v, want EOF", err)
		}
		if got := u.lastID.Load(); got != lastID {
			t.Errorf("upstream Last-Event-ID = %v, want %q", got, lastID)
		}
	}
	stream("")
	// Resuming after an event the proxy sent this principal passes; after
	// one it never sent, the upstream is not asked.
	stream("2")
	hdr := auth.Clone()
	hdr.Set("Accept", "text/event-stream")
	hdr.Set("Last-Event-ID", "41")
	resp := do(t, "GET", e.resource, "", hdr)
	if body, want := readAll(t, resp), `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`; resp.StatusCode != 400 || body != want {
		t.Errorf("GET with an unsent Last-Event-ID = %d %q, want 400 %q", resp.StatusCode, body, want)
	}
	if got := u.lastID.Load(); got != "2" {
		t.Errorf("upstream Last-Event-ID = %v after a refused resumption", got)
	}
	// A body with whitespace, key order and escapes no encoder would
	// produce, forwarded as is.
	odd := "{ \"params\" : {\"name\":\"who\\u0061mi\" ,\"arguments\":{}},\"method\":\"tools/call\",  \"id\":7,\"jsonrpc\":\"2.0\"}\n"
	go func() {
		for range 3 {
			select {
			case u.next <- struct{}{}:
			case <-time.After(5 * time.Second):
			}
		}
	}()
	resp = do(t, "POST", e.resource, odd, auth)
	readAll(t, resp)
	if got := u.body.Load(); got != odd {
		t.Errorf("upstream body = %q, want %q", got, odd)
	}
	resp = do(t, "DELETE", e.resource, "", auth)
	readAll(t, resp)
	if resp.StatusCode != 204 || u.method.Load() != "DELETE" {
		t.Errorf("DELETE = %d, upstream saw %v", resp.StatusCode, u.method.Load())
	}
}

// TestStreamFaults: an upstream killed mid-stream aborts the client's
// answer (an error, not a clean end); an idle stream ends cleanly after
// the idle timeout; a client leaving mid-stream ends the upstream request;
// a shutdown ends GET streams cleanly. Afterwards no answer is open and no
// goroutine is left (measured).
func TestStreamFaults(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Run("upstream killed", func(t *testing.T) {
		u := &sseUpstream{next: make(chan struct{}, 3), gone: make(chan struct{}), killConn: true}
		u.next <- struct{}{}
		u.next <- struct{}{}
		e, auth := rawEnv(t, u.ServeHTTP, nil)
		hdr := auth.Clone()
		hdr.Set("Accept", "text/event-stream")
		resp := do(t, "GET", e.resource, "", hdr)
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		readEvent(t, br)
		_, err := io.ReadAll(br)
		resp.Body.Close()
		if err == nil {
			t.Error("a stream whose upstream died ended cleanly; want an aborted answer")
		}
		waitFor(t, "no open answer", func() bool { return e.px.OpenAnswers() == 0 })
	})
	t.Run("idle", func(t *testing.T) {
		// The upstream stays silent and open for 2 minutes, 400 times
		// IdleStream: the stream must end cleanly by IdleStream, which
		// cancels the upstream request, and not by the upstream ending it
		// itself. Which one ended it is observed, not timed: no bound on
		// the elapsed real time, which a loaded machine stretches.
		u := &sseUpstream{next: make(chan struct{}, 1), gone: make(chan struct{}), silence: 2 * time.Minute}
		u.next <- struct{}{}
		e, auth := rawEnv(t, u.ServeHTTP, func(c *proxy.Config) { c.Timeouts.IdleStream = 300 * time.Millisecond })
		hdr := auth.Clone()
		hdr.Set("Accept", "text/event-stream")
		start := time.Now()
		resp := do(t, "GET", e.resource, "", hdr)
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		_, err := io.ReadAll(br)
		resp.Body.Close()
		t.Logf("idle stream ended after %v (IdleStream 300ms)", time.Since(start))
		if err != nil {
			t.Errorf("idle stream: %v, want a clean end", err)
		}
		if u.selfEnded.Load() {
			t.Fatalf("the upstream ended the silent stream itself after %v; want IdleStream (300ms) to end it", u.silence)
		}
		waitFor(t, "the upstream request ended", func() bool { return isClosed(u.gone) })
	})
	t.Run("client leaves", func(t *testing.T) {
		u := &sseUpstream{next: make(chan struct{}, 1), gone: make(chan struct{})}
		u.next <- struct{}{}
		e, auth := rawEnv(t, u.ServeHTTP, nil)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.resource, nil)
		req.Header = auth.Clone()
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readEvent(t, bufio.NewReader(resp.Body))
		cancel()
		resp.Body.Close()
		waitFor(t, "the upstream request ended", func() bool { return isClosed(u.gone) })
		waitFor(t, "no open answer", func() bool { return e.px.OpenAnswers() == 0 })
	})
	t.Run("shutdown", func(t *testing.T) {
		u := &sseUpstream{next: make(chan struct{}, 1), gone: make(chan struct{})}
		u.next <- struct{}{}
		e, auth := rawEnv(t, u.ServeHTTP, nil)
		hdr := auth.Clone()
		hdr.Set("Accept", "text/event-stream")
		resp := do(t, "GET", e.resource, "", hdr)
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		e.px.EndGetStreams()
		_, err := io.ReadAll(br)
		resp.Body.Close()
		if err != nil {
			t.Errorf("stream ended by shutdown: %v, want a clean end", err)
		}
		waitFor(t, "the upstream request ended", func() bool { return isClosed(u.gone) })
	})
	t.Run("shutdown: every answer", func(t *testing.T) {
		u := &sseUpstream{next: make(chan struct{}, 1), gone: make(chan struct{})}
		u.next <- struct{}{}
		e, auth := rawEnv(t, u.ServeHTTP, nil)
		hdr := auth.Clone()
		hdr.Set("Accept", "application/json, text/event-stream")
		hdr.Set("Content-Type", "application/json")
		resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, hdr)
		if resp.StatusCode != 200 {
			resp.Body.Close()
			t.Fatalf("POST: %d", resp.StatusCode)
		}
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		e.px.EndGetStreams() // a POST answer is not a GET stream
		if n := e.px.OpenAnswers(); n != 1 {
			t.Errorf("after EndGetStreams: %d open answers, want the POST's 1", n)
		}
		e.px.EndAnswers()
		_, err := io.ReadAll(br)
		resp.Body.Close()
		if err != nil {
			t.Errorf("answer ended by EndAnswers: %v, want a clean end", err)
		}
		waitFor(t, "the upstream request ended", func() bool { return isClosed(u.gone) })
	})
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "goroutines back to their number before the test", func() bool { return runtime.NumGoroutine() <= base+2 })
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Errorf("timed out waiting: %s", what)
}

// TestLargeAnswer: a 100 MiB upstream answer streams through in bounded
// memory (the proxy holds no copy of it).
func TestLargeAnswer(t *testing.T) {
	const size = 100 << 20
	chunk := strings.Repeat("x", 64<<10)
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for n := 0; n < size; n += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}, nil)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	resp := do(t, "POST", e.resource, callBody, auth)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	<-done
	if err != nil || n != size || resp.StatusCode != 200 {
		t.Fatalf("answer: %d bytes, %v, status %d", n, err, resp.StatusCode)
	}
	if grew := int64(peak.Load()) - int64(before.HeapInuse); grew > 16<<20 {
		t.Errorf("heap grew by %d MiB while 100 MiB streamed through", grew>>20)
	}
}
