package proxy_test

import (
	"errors"
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
// their keep-alive: nodeKeepAlive after its last write, a connection's
// keep-alive ends (a timer, as in Node.js), and a request arriving after
// that finds it closed (the close and the request cross on the wire),
// without an answer. Which ended an idle connection first, that timer or
// the proxy closing it, is recorded per connection: both are timers of
// this process, delayed alike on a loaded machine, so their order is
// compared rather than a wall-clock duration.
type keepAliveListener struct {
	net.Listener
	closed      atomic.Int32 // requests that found their connection closed for idleness
	proxyFirst  atomic.Int32 // idle connections the proxy closed before their keep-alive ended
	expireFirst atomic.Int32 // idle connections whose keep-alive ended while the proxy kept them
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
	l       *keepAliveListener
	mu      sync.Mutex
	timer   *time.Timer // the keep-alive, armed by each write
	expired bool        // the keep-alive ended first
	ended   bool        // the proxy closed it first
}

func (c *keepAliveConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.expired && !c.ended {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.timer = time.AfterFunc(nodeKeepAlive, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.ended && !c.expired {
				c.expired = true
				c.l.expireFirst.Add(1)
			}
		})
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *keepAliveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case n > 0 && c.expired:
		c.l.closed.Add(1)
		_ = c.Conn.Close()
		return 0, io.EOF
	case n > 0 && c.timer != nil:
		c.timer.Stop() // a request: the connection is in use again
	case n == 0 && errors.Is(err, io.EOF) && !c.expired && !c.ended && c.timer != nil:
		// The proxy closed it while its keep-alive ran (the server's own
		// aborted reads end with a deadline error, not EOF).
		c.ended = true
		c.timer.Stop()
		c.l.proxyFirst.Add(1)
	}
	return n, err
}

// TestUpstreamKeepAlive: a POST after the upstream's keep-alive has run
// out goes out on a new connection, not on the one the upstream closed
// (which the transport does not retry for a POST: the client would get a
// 502). The proxy closes idle upstream connections before Node.js does:
// the test waits until one of the two has ended the idle connection and
// requires that it was the proxy.
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
			for deadline := time.Now().Add(nodeKeepAlive + 30*time.Second); l.proxyFirst.Load()+l.expireFirst.Load() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the idle upstream connection was neither closed by the proxy nor expired")
				}
			}
			if n := l.expireFirst.Load(); n != 0 {
				t.Errorf("%d idle upstream connections outlived the upstream's keep-alive (%v)", n, nodeKeepAlive)
			}
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
