package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProxyBodylessMethodsSmuggling: a GET or DELETE carrying a body,
// sent to the proxy by an authorized client, must not reach an upstream
// that does not read such a body. Python's http.server (the upstream of
// docs/proxy.md's Python snippet) answers the GET without reading it and
// parses the body as the next request on its keep-alive connection: a
// request that never went through the proxy, whose own body is then the
// start of the next request the proxy sends on that connection, another
// principal's. The proxy refuses such a request (400) and nothing of it
// is forwarded, so the next caller's request is answered as usual.
func TestProxyBodylessMethodsSmuggling(t *testing.T) {
	python := requirePythonJWT(t)
	t.Parallel()
	p := newProxied(t, func(jwksURL, issuer string) string {
		return startProc(t, upstreamsDir, nil, python, "python_upstream.py", jwksURL, issuer)
	})
	hc := &http.Client{Timeout: 10 * time.Second}
	whoami := func(sub string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer "+p.token(t, sub))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A smuggled request head whose 200-byte body the next request on the
	// connection would supply.
	smuggled := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
	for _, tc := range []struct {
		method  string
		chunked bool
	}{{"GET", false}, {"DELETE", false}, {"GET", true}} {
		name := tc.method + map[bool]string{false: "/content-length", true: "/chunked"}[tc.chunked]
		t.Run(name, func(t *testing.T) {
			if code, body := whoami("bob"); code != 200 {
				t.Fatalf("bob before: %d %s", code, body)
			}
			req, _ := http.NewRequest(tc.method, p.resource, strings.NewReader(smuggled))
			if tc.chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(strings.NewReader(smuggled))
			}
			req.Header.Set("Authorization", "Bearer "+p.token(t, "alice"))
			req.Header.Set("Accept", "text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`; resp.StatusCode != 400 || string(b) != want {
				t.Errorf("%s with a body: %d %q, want 400 %q", tc.method, resp.StatusCode, b, want)
			}
			code, body := whoami("bob")
			var res struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			_ = json.Unmarshal([]byte(body), &res)
			if code != 200 || len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, `"sub": "bob"`) {
				t.Errorf("bob after alice's %s with a body: %s %s, want 200 and bob's whoami", tc.method, strconv.Itoa(code), body)
			}
		})
	}
	// A tools/call under a method Werkzeug-style servers upper-case, or
	// that a loose router maps to POST: 405 from the middleware, never the
	// upstream's answer to a body no policy read.
	for _, method := range []string{"post", "PUT", "PATCH"} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, p.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
			req.Header.Set("Authorization", "Bearer "+p.token(t, "alice"))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed."}}`; resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST, DELETE" || string(b) != want {
				t.Errorf("%s: %d (Allow %q) %q, want 405 (Allow %q) %q", method, resp.StatusCode, resp.Header.Get("Allow"), b, "GET, POST, DELETE", want)
			}
		})
	}
}
