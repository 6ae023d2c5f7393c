package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// identityLookalikes are 50 request headers that upstreams, frameworks
// and gateways trust as the caller's identity, tenant, credential or
// origin; a client sends them all, each with a value naming "intruder".
var identityLookalikes = []string{
	"X-Tenant-Id", "X-Tenant", "X-Org-Id", "X-Organization-Id", "X-Account-Id",
	"X-Auth-User", "X-Auth-Email", "X-Auth-Groups", "X-Auth-Roles", "X-Auth-Token",
	"X-Userinfo", "X-User-Info", "X-Jwt-Assertion", "X-Jwt-Payload", "X-Access-Token",
	"X-Id-Token", "X-Api-Key", "X-Apikey", "X-Consumer-Id", "X-Consumer-Username",
	"X-Credential-Identifier", "X-Authenticated-User", "X-Authenticated-Userid", "X-Authenticated-Scope", "X-Principal",
	"X-Roles", "X-Scopes", "X-Client-Id", "X-Client-Cert", "X-Ssl-Client-Cert",
	"X-Ssl-Client-Dn", "X-Client-Dn", "X-Envoy-Original-Path", "X-Envoy-Peer-Metadata", "X-Istio-Attributes",
	"X-Goog-Iap-Jwt-Assertion", "X-Amzn-Oidc-Identity", "X-Ms-Client-Principal-Name", "X-Forwarded-Email", "X-Forwarded-Preferred-Username",
	"X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded", "Impersonate-User",
	"Impersonate-Group", "Impersonate-Uid", "Cookie", "Proxy-Authorization", "X-Mcpguard-Subject",
}

// TestUpstreamHeaderAllowList: the upstream receives only the protocol's
// own request headers, the identity the proxy sets and the route's
// forward_headers. 50 identity-looking headers sent with every request of
// a go-sdk session (initialize, notifications, GET stream, tools/call)
// never arrive; a header named in forward_headers does, in any case of its
// name in the file.
//
// With the deny-list alone (main before the allow-list), 39 of the 50
// reached the go-sdk upstream (X-Tenant-Id, X-Auth-User, X-Userinfo,
// X-Jwt-Assertion, X-Access-Token, Impersonate-User, ...), and
// X-Not-Named too.
func TestUpstreamHeaderAllowList(t *testing.T) {
	if len(identityLookalikes) != 50 {
		t.Fatalf("%d identity headers, want 50", len(identityLookalikes))
	}
	const mode = proxy.ModeAssertion
	e := newTestEnv(t, envOptions{route: func(r *proxy.Route) {
		r.ForwardHeaders = []string{"x-request-id", "User-Agent"}
	}})
	ctx := testContext(t)
	tok := e.token(t, "alice", baseScope)
	sent := http.Header{"X-Request-Id": {"req-1"}, "User-Agent": {"allow-list-test"}, "X-Not-Named": {"intruder"}}
	for _, k := range identityLookalikes {
		sent[k] = []string{"intruder"}
	}
	cs := e.connect(ctx, t, tok, sent)
	if w := callWhoami(ctx, t, cs, "whoami"); w.Subject != "alice" {
		t.Errorf("whoami = %+v", w)
	}
	seen := e.upstream.all()
	if len(seen) < 3 {
		t.Fatalf("upstream saw %d requests", len(seen))
	}
	for i, h := range seen {
		for k, vs := range h {
			if strings.Contains(strings.Join(vs, " "), "intruder") {
				t.Errorf("request %d: upstream received %s: %q", i, k, vs)
			}
			if !upstreamMayReceive(k, mode) {
				t.Errorf("request %d: upstream received %s, which is neither the protocol's, the proxy's nor named", i, k)
			}
		}
		if h.Get("X-Request-Id") != "req-1" || h.Get("User-Agent") != "allow-list-test" {
			t.Errorf("request %d: forward_headers not forwarded: X-Request-Id %q, User-Agent %q", i, h.Get("X-Request-Id"), h.Get("User-Agent"))
		}
	}
}

// upstreamMayReceive lists what TestUpstreamHeaderAllowList allows.
func upstreamMayReceive(k, mode string) bool {
	switch k {
	case "Accept", "Content-Type", "Content-Length", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-Id", "Mcp-Method", "Mcp-Name",
		"Accept-Encoding", // added by the upstream transport (Go's), never the client's
		"X-Request-Id", "User-Agent":
		return true
	case "Authorization":
		return mode == proxy.ModeAssertion
	}
	return mode == proxy.ModeHeaders && strings.HasPrefix(k, "X-Mcpguard-") || strings.HasPrefix(k, "Mcp-Param-")
}

// TestForwardHeadersConfig: forward_headers entries are header names
// (tokens), and never one the proxy refuses to forward or sets itself.
func TestForwardHeadersConfig(t *testing.T) {
	tests := []struct {
		names   []string
		idHdr   string
		wantErr string
	}{
		{names: []string{"X-Request-Id", "traceparent", "Baggage"}},
		{names: []string{"X Request"}, wantErr: `routes[0].forward_headers[0] "X Request": not a header name`},
		{names: []string{"X-Ok", "X-Req:"}, wantErr: `forward_headers[1] "X-Req:": not a header name`},
		{names: []string{""}, wantErr: `forward_headers[0] "": not a header name`},
		{names: []string{"X-Trace-*"}, wantErr: `not a header name (prefixes are not supported)`},
		{names: []string{"X_Request_Id"}, wantErr: `a name with "_" is never forwarded`},
		{names: []string{"authorization"}, wantErr: `forward_headers[0] "authorization": never forwarded from a client`},
		{names: []string{"Cookie"}, wantErr: `never forwarded from a client`},
		{names: []string{"Forwarded"}, wantErr: `never forwarded from a client`},
		{names: []string{"Connection"}, wantErr: `never forwarded from a client`},
		{names: []string{"x-forwarded-for"}, wantErr: `never forwarded from a client (a forwarding or identity header)`},
		{names: []string{"X-Mcpguard-Subject"}, wantErr: `never forwarded from a client (a forwarding or identity header)`},
		{names: []string{"Impersonate-User"}, wantErr: `never forwarded from a client (a forwarding or identity header)`},
		{names: []string{"X-Upstream-Token"}, idHdr: "x-upstream-token", wantErr: `never forwarded from a client`},
	}
	for _, tt := range tests {
		yaml := "routes:\n  - resource: https://mcp.example.com/mcp\n    upstream: http://127.0.0.1:3000/mcp\n    issuers: [https://as.example.com]\n"
		if tt.idHdr != "" {
			yaml += "    identity:\n      header: " + tt.idHdr + "\n"
		}
		yaml += "    forward_headers: ["
		for i, n := range tt.names {
			if i > 0 {
				yaml += ", "
			}
			yaml += `"` + n + `"`
		}
		yaml += "]\n"
		cfg, err := proxy.Parse("mcpguard.yaml", []byte(yaml), func(string) string { return "" })
		if err != nil {
			t.Fatalf("Parse %v: %v", tt.names, err)
		}
		px, err := proxy.New(cfg)
		if px != nil {
			_ = px.Close()
		}
		if tt.wantErr == "" && err != nil && !strings.Contains(err.Error(), "forward_headers") {
			err = nil // refused for another reason than forward_headers
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.names, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tt.names, err, tt.wantErr)
		}
	}
}
