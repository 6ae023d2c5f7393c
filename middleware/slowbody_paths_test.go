package middleware

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowBodyEveryPath: every refusal sent before the body is read, on
// every path (the MCP route, Protect, RequireScopes behind Protect,
// Authenticate with Challenge, public operations, DPoP, CORS preflights,
// the step-up bound's terminal answer), reaches a client trickling a body
// (one byte every 200 ms, never finishing) within a second, with
// Connection: close and the challenge it gets today, and the server then
// closes the connection. The server is a plain http.Server with no
// timeouts, over real TCP on loopback (issue #22 item 3).
func TestSlowBodyEveryPath(t *testing.T) {
	// Step-up bound off on the shared fixtures: every case below that
	// lacks a scope gets its insufficient_scope challenge, however many
	// cases ran before it (stepup below has the bound).
	f := newFixture(t, func(c *Config) {
		c.AllowedOrigins = []string{"https://app.example.com"}
		c.StepUpLimit = -1
	})
	pub := f.with(t, func(c *Config) {
		c.AllowedOrigins = []string{"https://app.example.com"}
		c.StepUpLimit = -1
		c.Operations.Public = PublicOperations{Methods: []string{"ping"}}
	})
	small := f.with(t, func(c *Config) { c.MaxBodyBytes = 64 })
	stepup := f.with(t, func(c *Config) { c.StepUpLimit = 1 })
	dp := f.with(t, func(c *Config) { c.DPoP = DPoPConfig{Policy: DPoPAllowed}; c.StepUpLimit = -1 })
	bound := newDPoPFixture(t, DPoPAllowed, func(c *Config) { c.StepUpLimit = -1 })
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.m.Handler(echoHandler()))
	mux.Handle("/hooks", f.m.Protect("hooks")(ok))
	mux.Handle("/admin", f.m.Protect()(f.m.RequireScopes("admin")(ok)))
	mux.Handle("/pub", pub.m.Handler(echoHandler()))
	mux.Handle("/small", small.m.Handler(echoHandler()))
	mux.Handle("/stepup", stepup.m.Handler(echoHandler()))
	mux.Handle("/stepup-hooks", stepup.m.Protect("hooks")(ok))
	mux.Handle("/dpop", dp.m.Protect()(ok))
	mux.Handle("/dpop-mcp", dp.m.Handler(echoHandler()))
	mux.Handle("/bound-mcp", bound.m.Handler(echoHandler()))
	mux.Handle("/bound-hooks", bound.m.Protect("hooks")(ok))
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
	addr := ln.Addr().String()

	mcp := f.token(t, "mcp")
	noBase := f.token(t, "other")
	// The step-up fixture's bound (1) is spent on the base scopes: the
	// next refusal of this principal for them is the terminal 403.
	for i := range 2 {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+noBase)
		stepup.m.Handler(echoHandler()).ServeHTTP(rec, r)
		if rec.Code != http.StatusForbidden || strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope") != (i == 0) {
			t.Fatalf("step-up %d: %d %q", i, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
	auth := func(tok string) func(string) string {
		return func(string) string { return "Authorization: Bearer " + tok + "\r\n" }
	}
	fixed := func(h string) func(string) string { return func(string) string { return h } }
	// dpopHeaders is a valid proof of a token bound to bound's key that
	// lacks the base scope "mcp", for the request path.
	boundTok := bound.boundToken(t, bound.jkt, "other")
	dpopHeaders := func(path string) string {
		prf := bound.sign(t, proof{claims: map[string]any{"htu": "https://mcp.example.com" + path}}, boundTok)
		return "Authorization: DPoP " + boundTok + "\r\nDPoP: " + prf + "\r\n"
	}
	preflight := fixed("Origin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n")
	rm := `resource_metadata="` + metadataURL + `"`
	baseUnion := `Bearer error="insufficient_scope", scope="mcp other", ` + rm + `, error_description="The operation requires additional scope"`
	base := `Bearer error="insufficient_scope", scope="mcp", ` + rm + `, error_description="The operation requires additional scope"`
	hooks := `Bearer error="insufficient_scope", scope="mcp hooks", ` + rm + `, error_description="The operation requires additional scope"`
	const any = ""
	tests := []struct {
		name, method, path string
		headers            func(path string) string
		status             int
		wwwAuth            string // exact WWW-Authenticate; any: not checked
		contentLengthOnly  bool   // a chunked body is read (to learn its size)
	}{
		{name: "mcp tokenless", method: "POST", path: "/mcp", headers: fixed(""), status: 401},
		{name: "mcp bad token", method: "POST", path: "/mcp", headers: auth("bad.token.here"), status: 401},
		{name: "mcp POST without base scope", method: "POST", path: "/mcp", headers: auth(noBase), status: 403, wwwAuth: baseUnion},
		{name: "mcp DELETE without base scope", method: "DELETE", path: "/mcp", headers: auth(noBase), status: 403, wwwAuth: baseUnion},
		{name: "mcp GET without base scope", method: "GET", path: "/mcp", headers: auth(noBase), status: 403, wwwAuth: baseUnion},
		{name: "mcp GET unknown session", method: "GET", path: "/mcp", headers: fixed("Authorization: Bearer " + mcp + "\r\nMcp-Session-Id: no-such-session\r\n"), status: 404},
		{name: "mcp DELETE two session IDs", method: "DELETE", path: "/mcp", headers: fixed("Authorization: Bearer " + mcp + "\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\n"), status: 400},
		{name: "public GET unknown session", method: "GET", path: "/pub", headers: fixed("Mcp-Session-Id: no-such-session\r\n"), status: 401},
		{name: "mcp other origin", method: "POST", path: "/mcp", headers: fixed("Origin: https://evil.example\r\n"), status: 403},
		{name: "mcp CORS preflight", method: "OPTIONS", path: "/mcp", headers: preflight, status: 204},
		{name: "mcp body over the limit", method: "POST", path: "/small", headers: auth(mcp), status: 413, contentLengthOnly: true},
		{name: "mcp step-up exhausted", method: "POST", path: "/stepup", headers: auth(noBase), status: 403, wwwAuth: "Bearer " + rm},
		{name: "Protect tokenless", method: "POST", path: "/hooks", headers: fixed(""), status: 401},
		{name: "Protect bad token", method: "POST", path: "/hooks", headers: auth("bad.token.here"), status: 401},
		{name: "Protect insufficient scope", method: "POST", path: "/hooks", headers: auth(mcp), status: 403, wwwAuth: hooks},
		{name: "Protect CORS preflight", method: "OPTIONS", path: "/hooks", headers: preflight, status: 204},
		{name: "Protect step-up exhausted", method: "POST", path: "/stepup-hooks", headers: auth(noBase), status: 403},
		{name: "RequireScopes insufficient scope", method: "POST", path: "/admin", headers: auth(mcp), status: 403},
		{name: "Challenge tokenless", method: "POST", path: "/custom", headers: fixed(""), status: 401},
		// Authenticate puts no principal in the context: Challenge's
		// union has no granted scopes.
		{name: "Challenge without base scope", method: "POST", path: "/custom", headers: auth(noBase), status: 403, wwwAuth: base},
		{name: "public GET tokenless", method: "GET", path: "/pub", headers: fixed(""), status: 401},
		{name: "public DELETE tokenless", method: "DELETE", path: "/pub", headers: fixed(""), status: 401},
		{name: "public POST bad token", method: "POST", path: "/pub", headers: auth("bad.token.here"), status: 401},
		{name: "DPoP Protect bad proof", method: "POST", path: "/dpop", headers: fixed("Authorization: DPoP " + mcp + "\r\nDPoP: x.y.z\r\n"), status: 401},
		{name: "DPoP MCP bad proof", method: "POST", path: "/dpop-mcp", headers: fixed("Authorization: DPoP " + mcp + "\r\nDPoP: x.y.z\r\n"), status: 401},
		{name: "DPoP MCP without base scope", method: "POST", path: "/bound-mcp", headers: dpopHeaders, status: 403},
		{name: "DPoP Protect insufficient scope", method: "POST", path: "/bound-hooks", headers: dpopHeaders, status: 403},
	}
	for _, tt := range tests {
		for _, framing := range []string{"Transfer-Encoding: chunked\r\n", "Content-Length: 100000\r\n"} {
			if tt.contentLengthOnly && framing[0] == 'T' {
				continue
			}
			t.Run(tt.name+"/"+strings.SplitN(framing, ":", 2)[0], func(t *testing.T) {
				head := tt.method + " " + tt.path + " HTTP/1.1\r\nHost: mcp.example.com\r\nContent-Type: application/json\r\n" + tt.headers(tt.path) + framing + "\r\n"
				resp := trickle(t, addr, head, framing[0] == 'T')
				if resp.StatusCode != tt.status {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
				}
				if got := resp.Header.Get("WWW-Authenticate"); tt.wwwAuth != any && got != tt.wwwAuth {
					t.Errorf("WWW-Authenticate:\n got %s\nwant %s", got, tt.wwwAuth)
				}
			})
		}
	}
}

// trickle sends head, then one body byte every 200 ms without ever
// finishing the body (at most 150 bytes, 30 s), and returns the answer,
// which must be complete while the body still trickles (a server that
// drains the body first answers only after the trickle, if ever; that
// order is the check, not a bound on the elapsed real time, which a loaded
// machine stretches) and carry Connection: close; the server must then
// close the connection.
func trickle(t *testing.T, addr, head string, chunked bool) *http.Response {
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
	var trickled atomic.Bool // all 150 bytes sent
	go func() {
		for range 150 {
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
			case <-time.After(200 * time.Millisecond):
			}
		}
		trickled.Store(true)
	}()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(time.Minute))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer after %v while the body trickles: %v", time.Since(start).Round(time.Millisecond), err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || trickled.Load() {
		t.Fatalf("answer %d complete after %v (%v), want it while the body still trickles", resp.StatusCode, time.Since(start), err)
	}
	if !resp.Close {
		t.Errorf("%d without Connection: close (headers %v)", resp.StatusCode, resp.Header)
	}
	_, err = br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open %v after the answer: %v", time.Since(start), err)
	}
	return resp
}
