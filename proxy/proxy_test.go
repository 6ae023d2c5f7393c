package proxy_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestGoSDKThroughProxy: the official Go SDK client talks to a go-sdk
// upstream through the proxy; the upstream, protected by mcpguard that
// trusts only the proxy's JWK Set, sees the client's principal from the
// assertion, and the proxy refuses a tool the policy gives a scope the
// token lacks with the step-up 403.
func TestGoSDKThroughProxy(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			e := newTestEnv(t, envOptions{stateless: stateless})
			ctx := testContext(t)
			cs := e.connect(ctx, t, e.token(t, "alice", baseScope), nil)
			got := callWhoami(ctx, t, cs, "whoami")
			want := whoami{Issuer: e.px.AssertionIssuer(), Subject: "alice", ClientID: testClient, Tenant: "acme", Scopes: []string{baseScope}}
			if got.Issuer != want.Issuer || got.Subject != want.Subject || got.ClientID != want.ClientID || got.Tenant != want.Tenant || !slices.Equal(got.Scopes, want.Scopes) {
				t.Errorf("upstream principal = %+v, want %+v", got, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 2 {
				t.Fatalf("ListTools = %v, %v", tools, err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "admin_only"}); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("admin_only without %s: err = %v, want a 403", adminScope, err)
			}
			cs2 := e.connect(ctx, t, e.token(t, "alice", baseScope, adminScope), nil)
			if got := callWhoami(ctx, t, cs2, "admin_only"); !slices.Contains(got.Scopes, adminScope) {
				t.Errorf("admin_only with %s: upstream scopes %v", adminScope, got.Scopes)
			}
		})
	}
}

// TestRefusals: the answers of the middleware reach the client as
// mcpguard's, with the proxy's public URLs, and the upstream sees none of
// those requests.
func TestRefusals(t *testing.T) {
	e := newTestEnv(t, envOptions{})
	meta := e.proxyURL + "/.well-known/oauth-protected-resource/mcp"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	tests := []struct {
		name       string
		hdr        http.Header
		status     int
		challenge  string
		wantPrefix bool
	}{
		{"no token", nil, 401, `Bearer scope="mcp:tools", resource_metadata="` + meta + `"`, false},
		{"bad token", http.Header{"Authorization": {"Bearer abc.def.ghi"}}, 401, `Bearer error="invalid_token"`, true},
		{"token for another resource", http.Header{"Authorization": {"Bearer " + func() string {
			tok, _ := e.as.IssueToken("alice", "acme", testClient, e.upstreamURL, []string{baseScope})
			return tok
		}()}}, 401, `Bearer error="invalid_token"`, true},
		{"foreign origin", http.Header{"Origin": {"https://evil.example"}, "Authorization": {"Bearer " + e.token(t, "alice", baseScope)}}, 403, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, "POST", e.resource, init, tt.hdr)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			got := resp.Header.Get("Www-Authenticate")
			if tt.wantPrefix && !strings.HasPrefix(got, tt.challenge) || !tt.wantPrefix && tt.challenge != "" && got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
		})
	}
	if n := len(e.upstream.all()); n != 0 {
		t.Errorf("upstream received %d refused requests", n)
	}
	// The root document names the origin (mcpguard's prm handler).
	for u, resource := range map[string]string{meta: e.resource, e.proxyURL + "/.well-known/oauth-protected-resource": e.proxyURL} {
		resp := do(t, "GET", u, "", nil)
		var md struct {
			Resource        string   `json:"resource"`
			AS              []string `json:"authorization_servers"`
			ScopesSupported []string `json:"scopes_supported"`
		}
		err := json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || md.Resource != resource || !slices.Equal(md.AS, []string{e.issuer}) ||
			!slices.Equal(md.ScopesSupported, []string{baseScope, adminScope}) {
			t.Errorf("GET %s: %d %+v %v", u, resp.StatusCode, md, err)
		}
	}
}

// TestNothingOfTheClientUpstream sends the client's token, cookies, a DPoP
// header, forwarding headers and client-made copies of identity headers,
// and inspects every request the upstream received: none of them is
// there, and the only credential is the proxy's assertion, whose claims
// are those the docs list.
func TestNothingOfTheClientUpstream(t *testing.T) {
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) { r.ForwardHeaders = []string{"x-custom"} }})
	ctx := testContext(t)
	tok := e.token(t, "alice", baseScope)
	forged := http.Header{
		"Cookie":                 {"session=secret-cookie"},
		"Dpop":                   {"forged.dpop.proof"},
		"Proxy-Authorization":    {"Basic c2VjcmV0"},
		"X-Mcpguard-Subject":     {"root"},
		"X-Mcpguard-Tenant":      {"other"},
		"X-Forwarded-User":       {"root"},
		"X-Forwarded-For":        {"10.0.0.1"},
		"X-Auth-Request-User":    {"root"},
		"Forwarded":              {"for=10.0.0.1"},
		"X-Remote-User":          {"root"},
		"X-Original-Url":         {"/root/admin"},
		"X-Rewrite-Url":          {"/root/admin"},
		"X-Http-Method-Override": {"DELETE"},
		"X-Http-Method":          {"DELETE"},
		"X-Method-Override":      {"DELETE"},
		"X-Custom":               {"kept"},
		"X-Not-Listed":           {"dropped"},
	}
	cs := e.connect(ctx, t, tok, forged)
	callWhoami(ctx, t, cs, "whoami")
	seen := e.upstream.all()
	if len(seen) < 3 {
		t.Fatalf("upstream saw %d requests", len(seen))
	}
	for i, h := range seen {
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, tok) || strings.Contains(v, "secret") || strings.Contains(v, "root") || strings.Contains(v, "10.0.0.1") || strings.Contains(v, "forged") {
					t.Errorf("request %d: upstream received %s: %s", i, k, v)
				}
			}
		}
		for _, k := range []string{"Cookie", "Dpop", "Proxy-Authorization", "X-Mcpguard-Subject", "X-Mcpguard-Tenant", "X-Forwarded-User", "X-Forwarded-For", "X-Auth-Request-User", "Forwarded", "X-Remote-User",
			"X-Original-Url", "X-Rewrite-Url", "X-Http-Method-Override", "X-Http-Method", "X-Method-Override"} {
			if _, ok := h[k]; ok {
				t.Errorf("request %d: upstream received %s", i, k)
			}
		}
		if _, ok := h["X-Not-Listed"]; ok {
			t.Errorf("request %d: upstream received X-Not-Listed, which forward_headers does not name", i)
		}
		if h.Get("X-Custom") != "kept" {
			t.Errorf("request %d: X-Custom = %q, want kept", i, h.Get("X-Custom"))
		}
		a, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
		if !ok {
			t.Fatalf("request %d: Authorization = %q", i, h.Get("Authorization"))
		}
		checkAssertion(t, a, e)
	}
}

// checkAssertion decodes an assertion (its signature was verified by the
// upstream) and checks its header and claims.
func checkAssertion(t *testing.T, a string, e *testEnv) {
	t.Helper()
	parts := strings.Split(a, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion has %d parts", len(parts))
	}
	var hdr struct {
		Alg, Typ, Kid string
	}
	var c struct {
		Iss, Sub, Jti, Scope, Tenant, Idp string
		Aud                               string
		ClientID                          string `json:"client_id"`
		Exp, Iat                          int64
	}
	for i, v := range []any{&hdr, &c} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	if hdr.Alg != "ES256" || hdr.Typ != "at+jwt" || hdr.Kid == "" {
		t.Errorf("header = %+v", hdr)
	}
	life := time.Duration(c.Exp-c.Iat) * time.Second
	if c.Iss != e.px.AssertionIssuer() || c.Aud != e.upstreamURL || c.Sub != "alice" || c.ClientID != testClient ||
		c.Scope != baseScope || c.Tenant != "acme" || c.Idp != e.issuer || c.Jti == "" || life <= 0 || life > 5*time.Minute {
		t.Errorf("claims = %+v (lifetime %s)", c, life)
	}
}

// TestUpstreamRefusesClientToken: the upstream of the tests trusts the
// proxy only, so the client's own token, sent to it directly, is refused.
func TestUpstreamRefusesClientToken(t *testing.T) {
	e := newTestEnv(t, envOptions{})
	resp := do(t, "POST", e.upstreamURL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}})
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("client token at the upstream: %d, want 401", resp.StatusCode)
	}
}

// TestHeadBound: the proxy itself bounds a request's head at exactly
// 64 KiB (request line, header lines with their CRLFs, the empty line),
// whatever the server in front of it allows (httptest's 1 MiB here): at
// the bound the request reaches the upstream, one byte more gets 431 and
// does not.
func TestHeadBound(t *testing.T) {
	e := newTestEnv(t, envOptions{stateless: true})
	tok := e.token(t, "alice", baseScope)
	addr := strings.TrimPrefix(e.proxyURL, "http://")
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	send := func(size int) int {
		head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + tok +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n"
		raw := head + "X-Pad: " + strings.Repeat("a", size-len(head)-len("X-Pad: \r\n\r\n")) + "\r\n\r\n"
		if len(raw) != size {
			t.Fatalf("head is %d bytes, want %d", len(raw), size)
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, raw+body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d-byte head: %v", size, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct{ size, want, reached int }{
		{64 << 10, http.StatusOK, 1},
		{64<<10 + 1, http.StatusRequestHeaderFieldsTooLarge, 0},
		{512 << 10, http.StatusRequestHeaderFieldsTooLarge, 0},
	} {
		before := len(e.upstream.all())
		if got := send(tc.size); got != tc.want {
			t.Errorf("%d-byte head: status %d, want %d", tc.size, got, tc.want)
		}
		if n := len(e.upstream.all()) - before; n != tc.reached {
			t.Errorf("%d-byte head: the upstream received %d request(s), want %d", tc.size, n, tc.reached)
		}
	}
}
