package devas_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/devas"
)

// TestCORS: what a browser-based client (MCP Inspector's web UI) calls
// from the page answers cross-origin: the metadata, the JWKS, registration
// and the token endpoint, their preflights with 204 and the headers such
// clients send, and their answers, errors included, with
// Access-Control-Allow-Origin: * and no credentials. The authorization
// endpoint (a navigation, with a consent cookie) answers no CORS.
func TestCORS(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.EnableDCR = true })
	const origin = "http://localhost:6274"
	preflight := func(path, method, headers string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, e.issuer+path, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		req.Header.Set("Access-Control-Request-Headers", headers)
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		path, method, headers, wantMethods, wantHeaders string
	}{
		{"/.well-known/oauth-authorization-server", "GET", "mcp-protocol-version", "GET, HEAD", "MCP-Protocol-Version"},
		{"/.well-known/openid-configuration", "GET", "mcp-protocol-version", "GET, HEAD", "MCP-Protocol-Version"},
		{"/jwks", "GET", "", "GET, HEAD", "MCP-Protocol-Version"},
		{"/register", "POST", "content-type", "POST", "Authorization, Content-Type, DPoP, MCP-Protocol-Version"},
		{"/token", "POST", "content-type,dpop", "POST", "Authorization, Content-Type, DPoP, MCP-Protocol-Version"},
	} {
		resp := preflight(tc.path, tc.method, tc.headers)
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			h.Get("Access-Control-Allow-Methods") != tc.wantMethods || h.Get("Access-Control-Allow-Headers") != tc.wantHeaders ||
			h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Access-Control-Max-Age") != "600" {
			t.Errorf("preflight %s: %d %v", tc.path, resp.StatusCode, h)
		}
	}
	if resp := preflight("/authorize", "POST", "content-type"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("authorize answers CORS: %v", resp.Header)
	}

	// Real answers, an error among them, are readable cross-origin, with
	// DPoP-Nonce and WWW-Authenticate exposed.
	post := func(path, ctype, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, e.issuer+path, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", ctype)
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	reg := post("/register", "application/json", `{"redirect_uris":["http://localhost:6274/oauth/callback"],"token_endpoint_auth_method":"none","client_name":"Inspector"}`)
	bad := post("/token", "application/x-www-form-urlencoded", url.Values{"grant_type": {"authorization_code"}, "code": {"nope"}}.Encode())
	for name, resp := range map[string]*http.Response{"register": reg, "token error": bad} {
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Expose-Headers") != "DPoP-Nonce, WWW-Authenticate" {
			t.Errorf("%s (%d): %v", name, resp.StatusCode, resp.Header)
		}
	}
	if reg.StatusCode != http.StatusCreated || bad.StatusCode != http.StatusBadRequest && bad.StatusCode != http.StatusUnauthorized {
		t.Errorf("register %d, bad token request %d", reg.StatusCode, bad.StatusCode)
	}
	// A plain OPTIONS (no preflight) is still the endpoint's own answer.
	req, _ := http.NewRequest(http.MethodOptions, e.issuer+"/token", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("OPTIONS without preflight headers: %d", resp.StatusCode)
	}
}
