package middleware

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyEveryPath: every refusal sent before the body is read, on
// every path (the MCP route, Protect, RequireScopes behind Protect, public
// operations, DPoP, CORS preflights), reaches a client trickling a body
// within a second, with Connection: close, and the server closes the
// connection. The server is a plain http.Server with no timeouts, over
// real TCP on loopback (issue #22 item 3).
func TestSlowBodyEveryPath(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.AllowedOrigins = []string{"https://app.example.com"} })
	pub := f.with(t, func(c *Config) {
		c.AllowedOrigins = []string{"https://app.example.com"}
		c.Operations.Public = PublicOperations{Methods: []string{"ping"}}
	})
	dp := f.with(t, func(c *Config) { c.DPoP = DPoPConfig{Policy: DPoPAllowed} })
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.m.Handler(echoHandler()))
	mux.Handle("/hooks", f.m.Protect("hooks")(ok))
	mux.Handle("/admin", f.m.Protect()(f.m.RequireScopes("admin")(ok)))
	mux.Handle("/pub", pub.m.Handler(echoHandler()))
	mux.Handle("/dpop", dp.m.Protect()(ok))
	mux.Handle("/dpop-mcp", dp.m.Handler(echoHandler()))
	mux.HandleFunc("/custom", func(w http.ResponseWriter, r *http.Request) { // Authenticate + Challenge
		if _, err := f.m.Authenticate(r); err != nil {
			f.m.Challenge(w, r, err)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux} // no timeouts at all
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	mcp := "Bearer " + f.token(t, "mcp")
	noBase := "Bearer " + f.token(t, "other")
	preflight := "Origin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n"
	tests := []struct {
		name, method, path, headers string
		status                      int
	}{
		{"mcp tokenless", "POST", "/mcp", "", 401},
		{"mcp bad token", "POST", "/mcp", "Authorization: Bearer bad.token.here\r\n", 401},
		{"mcp DELETE without base scope", "DELETE", "/mcp", "Authorization: " + noBase + "\r\n", 403},
		{"mcp GET without base scope", "GET", "/mcp", "Authorization: " + noBase + "\r\n", 403},
		{"mcp other origin", "POST", "/mcp", "Origin: https://evil.example\r\n", 403},
		{"mcp CORS preflight", "OPTIONS", "/mcp", preflight, 204},
		{"Protect tokenless", "POST", "/hooks", "", 401},
		{"Protect bad token", "POST", "/hooks", "Authorization: Bearer bad.token.here\r\n", 401},
		{"Protect insufficient scope", "POST", "/hooks", "Authorization: " + mcp + "\r\n", 403},
		{"Protect CORS preflight", "OPTIONS", "/hooks", preflight, 204},
		{"RequireScopes insufficient scope", "POST", "/admin", "Authorization: " + mcp + "\r\n", 403},
		{"Challenge tokenless", "POST", "/custom", "", 401},
		{"Challenge without base scope", "POST", "/custom", "Authorization: " + noBase + "\r\n", 403},
		{"public GET tokenless", "GET", "/pub", "", 401},
		{"public DELETE tokenless", "DELETE", "/pub", "", 401},
		{"public POST bad token", "POST", "/pub", "Authorization: Bearer bad.token.here\r\n", 401},
		{"DPoP Protect bad proof", "POST", "/dpop", "Authorization: DPoP " + strings.TrimPrefix(mcp, "Bearer ") + "\r\nDPoP: x.y.z\r\n", 401},
		{"DPoP MCP bad proof", "POST", "/dpop-mcp", "Authorization: DPoP " + strings.TrimPrefix(mcp, "Bearer ") + "\r\nDPoP: x.y.z\r\n", 401},
	}
	for _, tt := range tests {
		for _, framing := range []string{"Transfer-Encoding: chunked\r\n", "Content-Length: 100000\r\n"} {
			t.Run(tt.name+"/"+strings.SplitN(framing, ":", 2)[0], func(t *testing.T) {
				trickle(t, ln.Addr().String(), tt.method+" "+tt.path+" HTTP/1.1\r\nHost: mcp.example.com\r\nContent-Type: application/json\r\n"+tt.headers+framing+"\r\n", framing[0] == 'T', tt.status)
			})
		}
	}
}

// trickle sends head, then one body byte every 50 ms (at most 200), and
// checks that the answer has status within a second, with Connection:
// close, and that the server then closes the connection.
func trickle(t *testing.T, addr, head string, chunked bool, status int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for range 200 {
			b := "{"
			if chunked {
				b = "1\r\n{\r\n"
			}
			if _, err := io.WriteString(conn, b); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(3 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within 3s while the body trickles: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != status || d > time.Second {
		t.Fatalf("got %d after %v, want %d within 1s", resp.StatusCode, d, status)
	}
	if !resp.Close {
		t.Errorf("%d without Connection: close (headers %v)", resp.StatusCode, resp.Header)
	}
	_, err = br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open %v after the answer: %v", time.Since(start), err)
	}
}
