package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// hostRefusal is the proxy's answer to a foreign Host on a loopback
// listener, byte for byte (docs/proxy.md, "Answers of the proxy itself").
const hostRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Forbidden"}}` + "\n"

// hostCall is the request of the Host tests: a tools/call the token may
// make, with an id the refusal must not echo (its body is never read).
const hostCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami"}}`

// countingBody counts the bytes read of a request body.
type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (c *countingBody) Close() error { return nil }

// addrOf is a net.Addr of another type than *net.TCPAddr.
type addrOf struct{ network, addr string }

func (a addrOf) Network() string { return a.network }
func (a addrOf) String() string  { return a.addr }

// hostRequest is a request to path with Host host, as if accepted on
// local (nil: no listener, a handler called directly), and its body.
func hostRequest(method, path, host string, local net.Addr, hdr http.Header) (*http.Request, *countingBody) {
	body := &countingBody{r: strings.NewReader("")}
	if method == http.MethodPost {
		body.r = strings.NewReader(hostCall)
	}
	req := httptest.NewRequest(method, path, nil)
	if method == http.MethodPost {
		req.Body, req.ContentLength = body, int64(len(hostCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Host = host
	if local != nil {
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
	}
	return req, body
}

// checkHostRefusal fails unless rec is exactly the Host refusal: 403, the
// fixed JSON-RPC body (nothing of the Host), Content-Type and no-store and
// no other header (no challenge, no CORS), with Connection: close when
// the request had a body.
func checkHostRefusal(t *testing.T, rec *httptest.ResponseRecorder, hadBody bool) {
	t.Helper()
	want := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	if hadBody {
		want.Set("Connection", "close")
	}
	if rec.Code != http.StatusForbidden {
		t.Errorf("status = %d, want 403", rec.Code)
	}
	if got := rec.Header(); !headersEqual(got, want) {
		t.Errorf("headers = %v, want exactly %v", got, want)
	}
	if got := rec.Body.String(); got != hostRefusal {
		t.Errorf("body = %q, want %q", got, hostRefusal)
	}
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestHostCheck: on a loopback listener (the connection's local address),
// a Host that names neither a loopback host nor the route's resource host
// gets the proxy's 403 before the token, the Origin or the body is looked
// at, and nothing reaches the upstream; loopback names in every valid form
// pass, with or without a port, in any case; a request accepted on another
// interface, on a unix socket or without a listener is not checked.
func TestHostCheck(t *testing.T) {
	up := &bodyLog{}
	e := newTestEnv(t, envOptions{upstream: up.handler})
	authz := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}

	lo4 := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080} // the 16-byte form net returns
	lo4b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: 8080}
	lo6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}
	loOther := &net.TCPAddr{IP: net.ParseIP("127.3.4.5"), Port: 8080}
	tests := []struct {
		name, host string
		local      net.Addr
		refused    bool
	}{
		// Loopback names pass.
		{"localhost", "localhost", lo4, false},
		{"localhost with port", "localhost:8080", lo4, false},
		{"localhost with empty port", "localhost:", lo4, false},
		{"uppercase LOCALHOST", "LOCALHOST", lo4, false},
		{"mixed case with port", "LocalHost:8080", lo6, false},
		{"127.0.0.1", "127.0.0.1", lo4, false},
		{"127.0.0.1 with port", "127.0.0.1:8080", lo4b, false},
		{"127/8", "127.9.9.9:1", lo4, false},
		{"[::1]", "[::1]", lo6, false},
		{"[::1] with port", "[::1]:8080", lo6, false},
		{"::1 in full", "[0:0:0:0:0:0:0:1]:8080", lo6, false},
		{"::1 with leading zeros", "[0000:0000:0000:0000:0000:0000:0000:0001]", lo6, false},
		{"::1 with a zone", "[::1%25lo]:8080", lo6, false},
		{"IPv4-mapped 127.0.0.1", "[::ffff:127.0.0.1]:8080", lo4, false},
		{"loopback Host on another loopback address", "localhost", loOther, false},
		// The route's own resource host passes: it is a loopback one here.
		{"the resource's host", strings.TrimPrefix(e.proxyURL, "http://"), lo4, false},

		// Everything else is refused.
		{"foreign name", "evil.example", lo4, true},
		{"foreign name with port", "evil.example:443", lo4, true},
		{"foreign name on ::1", "evil.example:8080", lo6, true},
		{"foreign name, uppercase", "EVIL.EXAMPLE", lo4, true},
		{"localhost as a label", "localhost.evil.example", lo4, true},
		{"a subdomain of localhost", "app.localhost", lo4, true},
		{"localhost with a trailing dot", "localhost.", lo4, true},
		{"loopback literal as a label", "127.0.0.1.evil.example:8080", lo4, true},
		{"empty Host", "", lo4, true},
		{"bare ::1 (no brackets)", "::1", lo6, true},
		{"bracketed IPv4", "[127.0.0.1]", lo4, true},
		{"bracketed name", "[localhost]:8080", lo4, true},
		{"unclosed bracket", "[::1", lo6, true},
		{"two ports", "localhost:8080:8080", lo4, true},
		{"IPv4 shorthand", "127.1", lo4, true},
		{"IPv4 as one number", "2130706433", lo4, true},
		{"IPv4 in hex", "0x7f.0.0.1", lo4, true},
		{"unspecified", "0.0.0.0:8080", lo4, true},
		{"IPv6 unspecified", "[::]:8080", lo6, true},
		{"private address", "192.168.1.10:8080", lo4, true},
		{"IPv6 other than ::1", "[::2]", lo6, true},
		{"mapped non-loopback", "[::ffff:192.0.2.1]", lo4, true},
		{"generic tcp Addr", "evil.example", addrOf{"tcp", "127.0.0.1:8080"}, true},
		{"generic tcp6 Addr with a zone", "evil.example", addrOf{"tcp6", "[::1%lo]:8080"}, true},

		// Not a loopback TCP listener: not checked.
		{"another interface", "evil.example", &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 8080}, false},
		{"another IPv6 interface", "evil.example", &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 8080}, false},
		{"all interfaces' address", "evil.example", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, false},
		{"a unix socket", "evil.example", &net.UnixAddr{Name: "/run/mcpguard.sock", Net: "unix"}, false},
		{"generic unix Addr named like loopback", "evil.example", addrOf{"unix", "127.0.0.1:8080"}, false},
		{"no listener (a handler called directly)", "evil.example", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up.take()
			req, body := hostRequest(http.MethodPost, "/mcp", tt.host, tt.local, authz)
			rec := httptest.NewRecorder()
			e.px.ServeHTTP(rec, req)
			got := up.take()
			if tt.refused {
				checkHostRefusal(t, rec, true)
				if body.n != 0 {
					t.Errorf("read %d body bytes of a refused request, want 0", body.n)
				}
				if len(got) != 0 {
					t.Errorf("the upstream received %q", got)
				}
				return
			}
			if rec.Code != http.StatusOK || len(got) != 1 || got[0] != hostCall {
				t.Errorf("status %d, upstream received %q; want 200 and the body once (answer %q)", rec.Code, got, rec.Body)
			}
		})
	}

	// The check comes first: whatever the token, Origin or method, a
	// foreign Host gets the same 403 and the upstream nothing.
	t.Run("before everything else", func(t *testing.T) {
		for _, c := range []struct {
			name, method string
			hdr          http.Header
		}{
			{"no token", http.MethodPost, nil},
			{"a malformed token", http.MethodPost, http.Header{"Authorization": {"Bearer bad.token.here"}}},
			{"two Authorization lines", http.MethodPost, http.Header{"Authorization": {"Bearer a", "Bearer b"}}},
			{"a foreign Origin", http.MethodPost, http.Header{"Authorization": authz["Authorization"], "Origin": {"https://evil.example"}}},
			{"the resource's Origin", http.MethodPost, http.Header{"Authorization": authz["Authorization"], "Origin": {e.proxyURL}}},
			{"a CORS preflight", http.MethodOptions, http.Header{"Origin": {e.proxyURL}, "Access-Control-Request-Method": {"POST"}}},
			{"a GET stream", http.MethodGet, http.Header{"Authorization": authz["Authorization"], "Accept": {"text/event-stream"}}},
			{"a DELETE", http.MethodDelete, http.Header{"Authorization": authz["Authorization"], "Mcp-Session-Id": {"s"}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				up.take()
				req, body := hostRequest(c.method, "/mcp", "evil.example", lo4, c.hdr)
				rec := httptest.NewRecorder()
				e.px.ServeHTTP(rec, req)
				checkHostRefusal(t, rec, c.method == http.MethodPost)
				if body.n != 0 {
					t.Errorf("read %d body bytes, want 0", body.n)
				}
				if got := up.take(); len(got) != 0 {
					t.Errorf("the upstream received %q", got)
				}
			})
		}
	})

	// Only the MCP endpoint is checked, as the go-sdk checks its
	// Streamable HTTP handler only: the metadata, the JWK Set and the
	// probes are public and take no URL from Host.
	t.Run("other paths", func(t *testing.T) {
		for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", e.px.JWKSPath(), "/healthz"} {
			req, _ := hostRequest(http.MethodGet, p, "evil.example", lo4, nil)
			rec := httptest.NewRecorder()
			e.px.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "evil.example") {
				t.Errorf("GET %s: %d %q, want 200 without the Host", p, rec.Code, rec.Body)
			}
		}
	})
}

// TestHostCheckResourceHost: behind a TLS terminator listening on
// loopback, the Host is the public one; a route accepts its own
// resource's host (name in any case, or the same IP literal in any form;
// the port is not compared), and no other route's.
func TestHostCheckResourceHost(t *testing.T) {
	up := &bodyLog{}
	e := newTestEnv(t, envOptions{upstream: up.handler, cfg: func(c *proxy.Config) {
		for _, res := range []string{"https://mcp.example.com/a/mcp", "https://203.0.113.7/b/mcp", "https://[2001:db8::1]:8443/c/mcp"} {
			r := c.Routes[0]
			r.Resource = res
			c.Routes = append(c.Routes, r)
		}
	}})
	lo := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8443}
	tests := []struct {
		path, host string
		refused    bool
	}{
		{"/a/mcp", "mcp.example.com", false},
		{"/a/mcp", "mcp.example.com:443", false},
		{"/a/mcp", "MCP.Example.COM:8443", false},
		{"/a/mcp", "localhost:8443", false},
		{"/a/mcp", "mcp.example.com.evil.example", true},
		{"/a/mcp", "example.com", true},
		{"/a/mcp", "203.0.113.7", true}, // another route's host
		{"/b/mcp", "203.0.113.7", false},
		{"/b/mcp", "203.0.113.7:443", false},
		{"/b/mcp", "[::ffff:203.0.113.7]", false},
		{"/b/mcp", "[::ffff:203.0.113.7]:443", false},
		{"/b/mcp", "203.0.113.8", true},
		{"/b/mcp", "mcp.example.com", true},
		{"/c/mcp", "[2001:db8::1]:8443", false},
		{"/c/mcp", "[2001:db8:0:0:0:0:0:1]", false},
		{"/c/mcp", "[2001:DB8::1]:443", false},
		{"/c/mcp", "2001:db8::1", true},
		{"/c/mcp", "[2001:db8::2]:8443", true},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.host, func(t *testing.T) {
			up.take()
			req, _ := hostRequest(http.MethodPost, tt.path, tt.host, lo, nil)
			rec := httptest.NewRecorder()
			e.px.ServeHTTP(rec, req)
			if tt.refused {
				checkHostRefusal(t, rec, true)
			} else if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
				// Tokenless: passing the Host check, it meets the token check.
				t.Errorf("status %d, WWW-Authenticate %q; want the middleware's 401", rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
			if got := up.take(); len(got) != 0 {
				t.Errorf("the upstream received %q", got)
			}
		})
	}
}

// TestHostCheckListeners: through real connections, the proxy's own
// 127.0.0.1 listener refuses a foreign Host and accepts LOCALHOST; a unix
// socket listener checks no Host. The refusal is logged with its outcome.
func TestHostCheckListeners(t *testing.T) {
	up := &bodyLog{}
	var mu sync.Mutex
	var logs bytes.Buffer
	e := newTestEnv(t, envOptions{upstream: up.handler, cfg: func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))
	}})
	tok := e.token(t, "alice", baseScope)
	addr := strings.TrimPrefix(e.proxyURL, "http://")
	_, port, _ := net.SplitHostPort(addr)

	raw := func(t *testing.T, dial func() (net.Conn, error), host string) (*http.Response, string) {
		t.Helper()
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		head := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + tok +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
			strconv.Itoa(len(hostCall)) + "\r\n\r\n" + hostCall
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	tcp := func() (net.Conn, error) { return net.Dial("tcp", addr) }

	t.Run("127.0.0.1 foreign Host", func(t *testing.T) {
		up.take()
		resp, body := raw(t, tcp, "evil.example:"+port)
		if resp.StatusCode != http.StatusForbidden || body != hostRefusal || resp.Header.Get("Cache-Control") != "no-store" ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("WWW-Authenticate") != "" || !resp.Close {
			t.Errorf("got %d %v %q, want the Host refusal with Connection: close", resp.StatusCode, resp.Header, body)
		}
		if got := up.take(); len(got) != 0 {
			t.Errorf("the upstream received %q", got)
		}
		mu.Lock()
		line := logs.String()
		mu.Unlock()
		var rec struct {
			Outcome string `json:"outcome"`
			Status  int    `json:"status"`
		}
		for l := range strings.Lines(line) {
			if strings.Contains(l, `"msg":"mcp request"`) {
				_ = json.Unmarshal([]byte(l), &rec)
			}
		}
		if rec.Outcome != "host_not_allowed" || rec.Status != http.StatusForbidden || strings.Contains(line, "evil.example") {
			t.Errorf("log = %s; want outcome host_not_allowed, status 403, and no Host", line)
		}
	})
	t.Run("127.0.0.1 LOCALHOST", func(t *testing.T) {
		up.take()
		resp, body := raw(t, tcp, "LOCALHOST:"+port)
		if got := up.take(); resp.StatusCode != http.StatusOK || len(got) != 1 || got[0] != hostCall {
			t.Errorf("got %d %q, upstream %q; want 200 and the body once", resp.StatusCode, body, got)
		}
	})
	t.Run("unix socket", func(t *testing.T) {
		sock := filepath.Join(unixSocketDir(t), "proxy.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: e.px}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { srv.Close() })
		up.take()
		resp, body := raw(t, func() (net.Conn, error) { return net.Dial("unix", sock) }, "evil.example")
		if got := up.take(); resp.StatusCode != http.StatusOK || len(got) != 1 || got[0] != hostCall {
			t.Errorf("got %d %q, upstream %q; want 200 and the body once", resp.StatusCode, body, got)
		}
	})
}

// lockedWriter serializes writes to a buffer shared with the test.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
