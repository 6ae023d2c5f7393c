package proxy_test

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// nodeKeepAlive is Node.js's http.Server keepAliveTimeout default (and
// uvicorn's): an idle keep-alive connection is closed after it.
const nodeKeepAlive = 5 * time.Second

// keepAliveListener makes its connections act as Node.js's at the end of
// their keep-alive: a request arriving on a connection idle for
// nodeKeepAlive or more finds it closed (the close and the request cross
// on the wire), without an answer.
type keepAliveListener struct {
	net.Listener
	closed atomic.Int32 // connections closed for idleness
}

func (l *keepAliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &keepAliveConn{Conn: c, l: l}, nil
}

type keepAliveConn struct {
	net.Conn
	l         *keepAliveListener
	mu        sync.Mutex
	lastWrite time.Time
}

func (c *keepAliveConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.lastWrite = time.Now()
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *keepAliveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	idle := !c.lastWrite.IsZero() && time.Since(c.lastWrite) >= nodeKeepAlive
	c.mu.Unlock()
	if n > 0 && idle {
		c.l.closed.Add(1)
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

// TestUpstreamKeepAlive: a POST after the upstream's keep-alive has run
// out goes out on a new connection, not on the one the upstream closed
// (which the transport does not retry for a POST: the client would get a
// 502). The proxy closes idle upstream connections before Node.js does.
func TestUpstreamKeepAlive(t *testing.T) {
	t.Parallel()
	var l *keepAliveListener
	e := newTestEnv(t, envOptions{
		upstream: func(*testing.T, string, string, string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
			})
		},
		listener: func(in net.Listener) net.Listener { l = &keepAliveListener{Listener: in}; return l },
	})
	auth := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}
	for i := range 2 {
		if i > 0 {
			time.Sleep(nodeKeepAlive + 300*time.Millisecond)
		}
		resp := do(t, "POST", e.resource, callBody, auth)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %d: %d %s (connections closed for idleness: %d)", i, resp.StatusCode, body, l.closed.Load())
		}
	}
	if n := l.closed.Load(); n != 0 {
		t.Errorf("%d requests went out on a connection idle past the upstream's keep-alive", n)
	}
}
