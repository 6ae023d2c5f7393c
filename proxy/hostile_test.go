package proxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/proxy"
)

// bodyLog is an upstream that records the exact body of every request it
// receives and answers each with an empty JSON-RPC result.
type bodyLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *bodyLog) handler(*testing.T, string, string, string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.bodies = append(l.bodies, string(b))
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
}

// take returns the bodies received since the last call.
func (l *bodyLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bodies
	l.bodies = nil
	return b
}

// TestHostileRequests runs the library's hostile request classes against
// the proxy (package middleware's TestSlowBodyEveryPath, integration's
// parse-differential and bound cases): a refused request never reaches the
// upstream, and an authorized one reaches it byte for byte as sent.
func TestHostileRequests(t *testing.T) {
	up := &bodyLog{}
	e := newTestEnv(t, envOptions{upstream: up.handler})
	authz := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}

	t.Run("parse differential", func(t *testing.T) {
		call := func(params string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
		}
		tests := []struct {
			name, body string
			status     int // 200: forwarded as is
		}{
			{"plain call", call(`{"name":"whoami"}`), 200},
			{"escapes and whitespace", " {\"jsonrpc\" : \"2.0\",\n\"id\":1,\t\"method\":\"tools\\/call\",\"params\":{\"name\":\"who\\u0061mi\"}} ", 200},
			{"step-up tool", call(`{"name":"admin_only"}`), 403},
			{"escaped step-up tool", call(`{"name":"\u0061dmin_only"}`), 403},
			{"duplicate name, refused last", call(`{"name":"whoami","name":"admin_only"}`), 400},
			{"duplicate name, refused first", call(`{"name":"admin_only","name":"whoami"}`), 400},
			{"duplicate name through an escape", call(`{"name":"whoami","n\u0061me":"admin_only"}`), 400},
			{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"admin_only"}}`, 400},
			{"duplicate params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"},"params":{"name":"admin_only"}}`, 400},
			{"case variant of method", `{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call","params":{"name":"admin_only"}}`, 400},
			{"case variant of name", call(`{"name":"whoami","Name":"admin_only"}`), 400},
			{"case variant of name alone", call(`{"NAME":"admin_only"}`), 400},
			{"batch", `[` + call(`{"name":"admin_only"}`) + `]`, 400},
			{"batch of allowed calls", `[` + call(`{"name":"whoami"}`) + `,` + call(`{"name":"whoami"}`) + `]`, 400},
			{"two documents", call(`{"name":"whoami"}`) + call(`{"name":"admin_only"}`), 400},
			{"invalid UTF-8 in name", call("{\"name\":\"admin_only\xff\"}"), 400},
			{"byte order mark", "\ufeff" + call(`{"name":"admin_only"}`), 400},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				up.take()
				resp := do(t, "POST", e.resource, tt.body, authz)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
				}
				got := up.take()
				switch {
				case tt.status == 200 && (len(got) != 1 || got[0] != tt.body):
					t.Errorf("upstream received %q, want exactly %q", got, tt.body)
				case tt.status != 200 && len(got) != 0:
					t.Errorf("upstream received refused request(s) %q", got)
				}
			})
		}
	})

	t.Run("oversized body", func(t *testing.T) {
		big := call1MiB()
		for _, chunked := range []bool{false, true} {
			up.take()
			req, err := http.NewRequest("POST", e.resource, strings.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			if chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(strings.NewReader(big))
			}
			req.Header = authz.Clone()
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("chunked %v: status = %d, want 413", chunked, resp.StatusCode)
			}
			if got := up.take(); len(got) != 0 {
				t.Errorf("chunked %v: upstream received %d request(s)", chunked, len(got))
			}
		}
	})

	// The proxy's test server has no timeouts at all: the refusal must
	// come from the proxy deciding before it reads the body. As in the
	// library, a POST with a valid token is read (its body names the
	// operation, which may be public); mcpguard proxy's read timeout bounds
	// that one.
	t.Run("slow body", func(t *testing.T) {
		noBase := "Bearer " + e.token(t, "bob", "other")
		tests := []struct {
			name, method, headers string
			status                int
		}{
			{"tokenless", "POST", "", 401},
			{"bad token", "POST", "Authorization: Bearer bad.token.here\r\n", 401},
			{"GET without base scope", "GET", "Authorization: " + noBase + "\r\n", 403},
			{"DELETE without base scope", "DELETE", "Authorization: " + noBase + "\r\n", 403},
			{"other origin", "POST", "Origin: https://evil.example\r\nAuthorization: " + authz.Get("Authorization") + "\r\n", 403},
		}
		addr := strings.TrimPrefix(e.proxyURL, "http://")
		for _, tt := range tests {
			for _, framing := range []string{"Transfer-Encoding: chunked\r\n", "Content-Length: 100000\r\n"} {
				t.Run(tt.name+"/"+strings.SplitN(framing, ":", 2)[0], func(t *testing.T) {
					up.take()
					trickle(t, addr, tt.method+" /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+tt.headers+framing+"\r\n", framing[0] == 'T', tt.status)
					if got := up.take(); len(got) != 0 {
						t.Errorf("upstream received %d request(s)", len(got))
					}
				})
			}
		}
	})
}

// call1MiB is a well-formed tools/call just over the default 1 MiB body
// bound.
func call1MiB() string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"pad":"` + strings.Repeat("a", 1<<20) + `"}}}`
}

// trickle sends head, then a body of one byte every 50 ms for 30 s, and
// wants the answer status while the body still trickles (the refusal needs
// no body; a server that drains it first answers only after the trickle,
// if ever), with the connection closed after it (package middleware's
// helper). That order is the check, not a bound on the elapsed real time,
// which a loaded machine stretches.
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
	var trickled atomic.Bool // all 600 bytes sent
	go func() {
		for range 600 {
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
		trickled.Store(true)
	}()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(time.Minute))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer while the body trickles: %v", err)
	}
	if trickled.Load() {
		t.Fatalf("got %d after %v, only once the 30 s trickle had ended", resp.StatusCode, time.Since(start))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("got %d after %v, want %d", resp.StatusCode, time.Since(start), status)
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

// TestBodylessMethods: a method other than POST, GET and DELETE gets 405,
// and a GET or DELETE with a body 400, with "Connection: close"; neither
// reaches the upstream (one that does not read a GET's body would parse
// it as a request that never went through the proxy:
// integration's TestProxyBodylessMethodsSmuggling). A GET with an empty
// chunked body passes, without one.
func TestBodylessMethods(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+strconv.Itoa(len(b))+" "+strconv.FormatInt(r.ContentLength, 10))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}, nil)
	addr := strings.TrimPrefix(e.proxyURL, "http://")
	smuggled := "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n"
	tests := []struct {
		name, method, framing, body string
		status                      int
		allow, upstream             string
	}{
		{"GET", "GET", "", "", 202, "", "GET 0 0"},
		{"GET, empty Content-Length", "GET", "Content-Length: 0\r\n", "", 202, "", "GET 0 0"},
		{"GET, empty chunked", "GET", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n", 202, "", "GET 0 0"},
		{"DELETE", "DELETE", "", "", 202, "", "DELETE 0 0"},
		{"GET with a body", "GET", "Content-Length: " + strconv.Itoa(len(smuggled)) + "\r\n", smuggled, 400, "", ""},
		{"GET with a chunked body", "GET", "Transfer-Encoding: chunked\r\n", strconv.FormatInt(int64(len(smuggled)), 16) + "\r\n" + smuggled + "\r\n0\r\n\r\n", 400, "", ""},
		{"DELETE with a body", "DELETE", "Content-Length: 2\r\n", "{}", 400, "", ""},
		{"PUT", "PUT", "Content-Length: " + strconv.Itoa(len(callBody)) + "\r\n", callBody, 405, "GET, POST, DELETE", ""},
		{"PATCH", "PATCH", "Content-Length: " + strconv.Itoa(len(callBody)) + "\r\n", callBody, 405, "GET, POST, DELETE", ""},
		{"lower-case post", "post", "Content-Length: " + strconv.Itoa(len(callBody)) + "\r\n", callBody, 405, "GET, POST, DELETE", ""},
		{"HEAD", "HEAD", "", "", 405, "GET, POST, DELETE", ""},
		{"OPTIONS without Origin", "OPTIONS", "", "", 405, "GET, POST, DELETE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c, tt.method+" /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: "+auth.Get("Authorization")+
				"\r\nAccept: text/event-stream\r\n"+tt.framing+"\r\n"+tt.body)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: tt.method})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow {
				t.Errorf("answer = %d (Allow %q) %q, want %d (Allow %q)", resp.StatusCode, resp.Header.Get("Allow"), b, tt.status, tt.allow)
			}
			// The middleware's answers (docs/middleware.md, rows 28 and 29).
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
			if tt.status == http.StatusMethodNotAllowed {
				want = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed."}}`
			}
			if tt.status >= 400 && tt.method != "HEAD" && string(b) != want {
				t.Errorf("body = %q, want %q", b, want)
			}
			if tt.status >= 400 && tt.body != "" && !resp.Close {
				t.Error("refused with its body unread, without Connection: close")
			}
			mu.Lock()
			got := strings.Join(seen, "; ")
			mu.Unlock()
			if got != tt.upstream {
				t.Errorf("upstream received %q, want %q", got, tt.upstream)
			}
		})
	}
}

// TestUpstreamRedirect: an upstream's redirect (Starlette's
// redirect_slashes answers /mcp with 307 to /mcp/ on the Host it was sent,
// the upstream's own) reaches the client as the proxy's 502, with no
// Location: a client must never be sent to the upstream's address, where
// Go's http.Client (the go-sdk's) would resend the client's own token, as
// it keeps Authorization on a redirect to the same host name on another
// port.
func TestUpstreamRedirect(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var mu sync.Mutex
			var direct []string // the Authorization of requests that came to /mcp/
			var self string
			e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/mcp/" {
					mu.Lock()
					direct = append(direct, r.Header.Get("Authorization"))
					mu.Unlock()
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
					return
				}
				w.Header().Set("Location", self+"/")
				w.WriteHeader(status)
			}, nil)
			self = e.upstreamURL
			resp := do(t, "POST", e.resource, callBody, auth)
			body := readAll(t, resp)
			if want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Bad Gateway"}}` + "\n"; resp.StatusCode != 502 || body != want {
				t.Errorf("answer = %d %q, want 502 %q", resp.StatusCode, body, want)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("Location = %q", loc)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range direct {
				if a == auth.Get("Authorization") {
					t.Errorf("the upstream received the client's own token at %s/", e.upstreamURL)
				}
			}
			if len(direct) != 0 {
				t.Errorf("the client was sent to the upstream %d time(s)", len(direct))
			}
		})
	}
}

// TestUnderscoreHeaders: no request header whose name has an underscore
// reaches the upstream. CGI-style servers fold "_" and "-" into one name
// (Python's wsgiref: X_Mcpguard_Subject and X-Mcpguard-Subject are both
// HTTP_X_MCPGUARD_SUBJECT, joined with a comma; Django's request.META;
// Rack), so such a header would be a second copy of a header the proxy
// strips or sets (the identity headers, X-Forwarded-*, Mcp-Session-Id,
// which the session binding checks) that no check of the proxy saw.
func TestUnderscoreHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	}, func(c *proxy.Config) {
		c.Routes[0].Identity = proxy.Identity{Mode: proxy.ModeHeaders}
		c.Routes[0].ForwardHeaders = []string{"X-Kept"}
	})
	addr := strings.TrimPrefix(e.proxyURL, "http://")
	forged := "X_Mcpguard_Subject: root\r\nX_MCPGUARD_SCOPES: mcp:admin\r\nMcp_Session_Id: bobs-session\r\nX_Forwarded_For: 10.0.0.1\r\n" +
		"Remote_User: root\r\nX-Mcpguard_Principal: root\r\nAuthorization_: x\r\nX-Kept: yes\r\n"
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: "+auth.Get("Authorization")+
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+forged+
		"Content-Length: "+strconv.Itoa(len(callBody))+"\r\n\r\n"+callBody)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range seen {
		if strings.Contains(k, "_") {
			t.Errorf("the upstream received %s: %v", k, v)
		}
	}
	if seen.Get("X-Kept") != "yes" || seen.Get(proxy.HeaderSubject) != "alice" {
		t.Errorf("upstream headers = %v", seen)
	}
}

// TestUpstreamInformational: an upstream's 1xx answers (103 Early Hints)
// are dropped. ReverseProxy forwards them with every header of the
// upstream, past the proxy's filters (its Set-Cookie, WWW-Authenticate,
// "Access-Control-Allow-Origin: *"), clears the headers the middleware had
// set (CORS for an allowed origin), and the session binding takes the 103
// for the answer, so the session of the 200 after it is never bound and
// its owner's next request gets 404. Endless 1xx answers are bounded by
// timeouts.max_response_header_bytes, with the final answer's (502).
func TestUpstreamInformational(t *testing.T) {
	var endless atomic.Bool
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		if r.Header.Get("Mcp-Session-Id") == "" {
			for i := 0; i == 0 || endless.Load() && i < 100; i++ {
				h.Set("Set-Cookie", "evil=1")
				h.Set("Www-Authenticate", `Bearer resource_metadata="http://evil.example/x"`)
				h.Set("Access-Control-Allow-Origin", "*")
				h.Set("X-Pad", strings.Repeat("p", 4<<10))
				w.WriteHeader(http.StatusEarlyHints)
				clear(h)
			}
			h.Set("Mcp-Session-Id", "s1")
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	}, nil)
	addr := strings.TrimPrefix(e.proxyURL, "http://")
	post := func(extra string) string {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: "+auth.Get("Authorization")+
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n"+extra+
			"Content-Length: "+strconv.Itoa(len(callBody))+"\r\n\r\n"+callBody)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	raw := post("Origin: " + e.proxyURL + "\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != e.proxyURL || resp.Header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("answer = %d %v, want 200 with the proxy's CORS headers and the session", resp.StatusCode, resp.Header)
	}
	for _, bad := range []string{" 103 ", "evil", "Access-Control-Allow-Origin: *"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the client received %q:\n%.600s", bad, raw)
		}
	}
	if raw := post("Mcp-Session-Id: s1\r\n"); !strings.HasPrefix(raw, "HTTP/1.1 200 ") {
		t.Errorf("the owner's next request in its session:\n%s", raw)
	}
	endless.Store(true)
	if raw := post(""); !strings.HasPrefix(raw, "HTTP/1.1 502 ") || strings.Contains(raw, "evil") {
		t.Errorf("after 100 answers 103 of 4 KiB:\n%.300s", raw)
	}
}

// TestUpstreamAnswerHeaders: whatever the answer (passed through, a list
// rewritten, an SSE stream), the client gets none of the upstream's
// WWW-Authenticate, CORS headers, DPoP-Nonce or Set-Cookie, and no
// trailer. ReverseProxy copies trailers into the header map after the
// body: a list answer, whose header is held until its body is rewritten,
// sent them as headers ("Access-Control-Allow-Origin: *", a Set-Cookie,
// an Mcp-Session-Id), and a passed-through one as trailers.
func TestUpstreamAnswerHeaders(t *testing.T) {
	bad := map[string]string{
		"Www-Authenticate":            `Bearer resource_metadata="http://evil.example/x"`,
		"Access-Control-Allow-Origin": "*",
		"Dpop-Nonce":                  "evil-nonce",
		"Set-Cookie":                  "evil=1",
	}
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := w.Header()
		for k, v := range bad {
			h.Set(k, v)
		}
		h.Set("Trailer", "Www-Authenticate, Access-Control-Allow-Origin, Dpop-Nonce, Set-Cookie, Mcp-Session-Id, X-Trailer")
		result := `{}`
		if strings.Contains(string(b), "tools/list") {
			result = `{"tools":[{"name":"whoami","inputSchema":{"type":"object"}}]}`
		}
		msg := `{"jsonrpc":"2.0","id":7,"result":` + result + `}`
		if strings.Contains(string(b), `"sse"`) {
			h.Set("Content-Type", "text/event-stream")
			msg = "event: message\ndata: " + msg + "\n\n"
		} else {
			h.Set("Content-Type", "application/json")
		}
		w.WriteHeader(200)
		io.WriteString(w, msg)
		for k, v := range bad {
			h.Set(k, v)
		}
		h.Set("Mcp-Session-Id", "trailer-session")
		h.Set("X-Trailer", "x")
	}, nil)
	for _, tc := range []struct{ name, body string }{
		{"tools/call", callBody},
		{"tools/list", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{"tools/call as SSE", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{"sse":true}}}`},
		{"tools/list as SSE", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"sse":true}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, "POST", e.resource, tc.body, auth)
			body := readAll(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(body, `"id":7`) {
				t.Fatalf("answer = %d %q", resp.StatusCode, body)
			}
			for _, hh := range []http.Header{resp.Header, resp.Trailer} {
				for k := range bad {
					if v := hh.Values(k); len(v) > 0 {
						t.Errorf("the client received %s: %q", k, v)
					}
				}
				for _, k := range []string{"Trailer", "Mcp-Session-Id", "X-Trailer"} {
					if v := hh.Values(k); len(v) > 0 {
						t.Errorf("the client received %s: %q", k, v)
					}
				}
			}
		})
	}
}

// TestUpstreamSwitchingProtocols: an upstream answering 101 to a request
// that asked for no upgrade gets the client 502, and its connection is
// closed: no answer stays open. ReverseProxy refuses the switch, but
// without closing the answer's body, which the proxy had wrapped to track
// it: every such answer stayed counted, its upstream connection open until
// the idle timeout.
func TestUpstreamSwitchingProtocols(t *testing.T) {
	gone := make(chan struct{}, 3)
	e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := brw.ReadByte(); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			gone <- struct{}{} // the proxy closed the connection
		}
	}, nil)
	for range 3 {
		resp := do(t, "POST", e.resource, callBody, auth)
		if body := readAll(t, resp); resp.StatusCode != 502 || !strings.Contains(body, `"Bad Gateway"`) {
			t.Errorf("answer = %d %q, want 502", resp.StatusCode, body)
		}
	}
	for range 3 {
		select {
		case <-gone:
		case <-time.After(30 * time.Second):
			t.Fatal("the upstream connection of a 101 answer is still open")
		}
	}
	waitFor(t, "no open answer", func() bool { return e.px.OpenAnswers() == 0 })
}
