package middleware

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPMethods: Handler refuses, before the next handler and unread,
// a method other than POST, GET and DELETE (405, Allow) and a GET or
// DELETE with a body (400), with a token or on a public path; the CORS
// preflight of an allowed origin still gets its 204.
func TestHTTPMethods(t *testing.T) {
	const app = "http://localhost:6274"
	f := newFixture(t, func(c *Config) { c.AllowedOrigins = []string{app} })
	pub := f.with(t, func(c *Config) { c.Operations.Public = testPublic; c.AllowedOrigins = []string{app} })
	call := rpcBody("", "tools/call", "search")
	const (
		bodyNotAllowed = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method not allowed."}}`
		bodyInvalid    = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
	)
	tests := []struct {
		name, method, body string
		chunked, token     bool
		scopes             []string
		origin             string
		status             int
		allow, conn, want  string
		reached            bool
	}{
		{name: "POST", method: "POST", body: call, token: true, status: 200, reached: true},
		{name: "GET", method: "GET", token: true, status: 200, reached: true},
		{name: "DELETE", method: "DELETE", token: true, status: 200, reached: true},
		{name: "GET, empty chunked", method: "GET", chunked: true, token: true, status: 200, reached: true},
		{name: "lower-case post", method: "post", body: call, token: true, status: 405, allow: "GET, POST, DELETE", conn: "close", want: bodyNotAllowed},
		{name: "PUT", method: "PUT", body: call, token: true, status: 405, allow: "GET, POST, DELETE", conn: "close", want: bodyNotAllowed},
		{name: "PATCH", method: "PATCH", body: call, token: true, status: 405, allow: "GET, POST, DELETE", conn: "close", want: bodyNotAllowed},
		{name: "TRACE", method: "TRACE", token: true, status: 405, allow: "GET, POST, DELETE", want: bodyNotAllowed},
		{name: "made-up", method: "FROB", body: call, token: true, status: 405, allow: "GET, POST, DELETE", conn: "close", want: bodyNotAllowed},
		{name: "HEAD", method: "HEAD", token: true, status: 405, allow: "GET, POST, DELETE", want: bodyNotAllowed},
		{name: "OPTIONS, no preflight", method: "OPTIONS", token: true, status: 405, allow: "GET, POST, DELETE", want: bodyNotAllowed},
		{name: "GET with a body", method: "GET", body: call, token: true, status: 400, conn: "close", want: bodyInvalid},
		{name: "GET with a chunked body", method: "GET", body: call, chunked: true, token: true, status: 400, conn: "close", want: bodyInvalid},
		{name: "DELETE with a body", method: "DELETE", body: "{}", token: true, status: 400, conn: "close", want: bodyInvalid},
		{name: "PUT without a token", method: "PUT", body: call, status: 401, conn: "close", want: bodyUnauthorized},
		{name: "preflight", method: "OPTIONS", origin: app, status: 204},
		{name: "PUT without the base scopes", method: "PUT", body: call, scopes: []string{"tools:read"}, status: 403, conn: "close", want: bodyInsufficient},
		{name: "public PUT, no session", method: "PUT", body: rpcBody("", "tools/list", ""), status: 401, conn: "close", want: bodyUnauthorized},
		{name: "public GET with a body, no session", method: "GET", body: call, status: 401, conn: "close", want: bodyUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.m
			if strings.HasPrefix(tt.name, "public") {
				m = pub.m
			}
			reached := false
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				_, _ = io.Copy(io.Discard, r.Body)
			}))
			var body io.Reader
			if tt.body != "" || tt.chunked {
				body = strings.NewReader(tt.body)
			}
			r := httptest.NewRequest(http.MethodGet, resource, body)
			r.Method = tt.method
			if tt.chunked {
				r.ContentLength = -1
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tt.token {
				r.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:all"))
			}
			if tt.scopes != nil {
				r.Header.Set("Authorization", "Bearer "+f.token(t, tt.scopes...))
			}
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
				r.Header.Set("Access-Control-Request-Method", "POST")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status || w.Header().Get("Allow") != tt.allow || w.Header().Get("Connection") != tt.conn {
				t.Errorf("answer = %d, Allow %q, Connection %q; want %d, %q, %q", w.Code, w.Header().Get("Allow"), w.Header().Get("Connection"), tt.status, tt.allow, tt.conn)
			}
			if tt.want != "" && w.Body.String() != tt.want {
				t.Errorf("body = %q, want %q", w.Body.String(), tt.want)
			}
			if reached != tt.reached {
				t.Errorf("next handler reached = %v, want %v", reached, tt.reached)
			}
		})
	}
}
