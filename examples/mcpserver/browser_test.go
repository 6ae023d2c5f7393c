package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRunBrowserClient walks, over real HTTP against the example started
// with -allowed-origins, the requests a browser-based MCP client (MCP
// Inspector's web UI connecting directly) makes from its page, with the
// CORS protocol a browser enforces: every cross-origin request it reads
// must carry Access-Control-Allow-Origin for the page's origin (or *), and
// every non-simple request is preceded by a preflight that must succeed.
// The flow: preflight and 401 at the MCP endpoint (WWW-Authenticate
// readable), protected-resource metadata, authorization-server metadata
// with MCP-Protocol-Version, dynamic registration, the authorization
// request (a navigation), the token request, and an authorized tools/call.
// A page of another origin is refused at the MCP endpoint.
func TestRunBrowserClient(t *testing.T) {
	const page = "http://localhost:6274"
	ep, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "error", "-allowed-origins", page}, noEnv)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	// readable: what the browser checks before handing a cross-origin
	// answer to the page.
	readable := func(step string, resp *http.Response, exposed ...string) {
		t.Helper()
		acao := resp.Header.Get("Access-Control-Allow-Origin")
		if acao != page && acao != "*" {
			t.Fatalf("%s: %d, Access-Control-Allow-Origin %q: the browser hides the answer", step, resp.StatusCode, acao)
		}
		for _, h := range exposed {
			if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), h) {
				t.Errorf("%s: %s not exposed (%q)", step, h, resp.Header.Get("Access-Control-Expose-Headers"))
			}
		}
	}
	preflight := func(step, u, method, headers string) {
		t.Helper()
		resp, _ := do(http.MethodOptions, u, "", "Origin", page, "Access-Control-Request-Method", method, "Access-Control-Request-Headers", headers)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s preflight: %d", step, resp.StatusCode)
		}
		readable(step+" preflight", resp)
		allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
		for _, h := range strings.Split(headers, ",") {
			if h = strings.TrimSpace(h); h != "" && allowed != "*" && !strings.Contains(allowed, h) {
				t.Errorf("%s preflight: request header %q not allowed (%q)", step, h, allowed)
			}
		}
		if m := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, method) {
			t.Errorf("%s preflight: method %s not allowed (%q)", step, method, m)
		}
	}
	rpc := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	mcpHeaders := "authorization, content-type, mcp-protocol-version"

	// 1. The MCP endpoint: preflight, then the 401 whose challenge the page reads.
	preflight("MCP endpoint", ep.MCP, "POST", mcpHeaders)
	resp, _ := do(http.MethodPost, ep.MCP, rpc, "Origin", page, "Content-Type", "application/json", "MCP-Protocol-Version", "2025-11-25")
	readable("401", resp, "WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+ep.Metadata+`"`) {
		t.Fatalf("401: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// 2. Protected-resource and authorization-server metadata.
	preflight("resource metadata", ep.Metadata, "GET", "mcp-protocol-version")
	resp, _ = do(http.MethodGet, ep.Metadata, "", "Origin", page, "MCP-Protocol-Version", "2025-11-25")
	readable("resource metadata", resp)
	asMeta := ep.Issuer + "/.well-known/oauth-authorization-server"
	preflight("AS metadata", asMeta, "GET", "mcp-protocol-version")
	resp, body := do(http.MethodGet, asMeta, "", "Origin", page, "MCP-Protocol-Version", "2025-11-25")
	readable("AS metadata", resp)
	var as struct {
		Authorize string `json:"authorization_endpoint"`
		Token     string `json:"token_endpoint"`
		Register  string `json:"registration_endpoint"`
	}
	if err := json.Unmarshal([]byte(body), &as); err != nil || as.Register == "" {
		t.Fatalf("AS metadata: %v %s", err, body)
	}
	// 3. Dynamic registration, with the first challenge's scope.
	const redirect = page + "/oauth/callback"
	preflight("registration", as.Register, "POST", "content-type")
	resp, body = do(http.MethodPost, as.Register, `{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"],"client_name":"MCP Inspector","scope":"mcp:tools"}`,
		"Origin", page, "Content-Type", "application/json")
	readable("registration", resp)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(body), &reg); err != nil || resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("registration: %d %s", resp.StatusCode, body)
	}
	// 4. The authorization request is a navigation: no CORS involved.
	v := make([]byte, 32)
	_, _ = rand.Read(v)
	verifier := base64.RawURLEncoding.EncodeToString(v)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "scope": {"mcp:tools"},
		"state": {"s"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {ep.MCP},
	}
	resp, _ = do(http.MethodGet, as.Authorize+"?"+q.Encode(), "")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// 5. The token request, from the page.
	preflight("token", as.Token, "POST", "content-type")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {reg.ClientID}, "code_verifier": {verifier}, "resource": {ep.MCP}}
	resp, body = do(http.MethodPost, as.Token, form.Encode(), "Origin", page, "Content-Type", "application/x-www-form-urlencoded")
	readable("token", resp)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	// 6. The authorized call, readable by the page.
	resp, body = do(http.MethodPost, ep.MCP, rpc, "Origin", page, "Content-Type", "application/json",
		"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-11-25", "Authorization", "Bearer "+tok.AccessToken)
	readable("tools/call", resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"subject":"dev-user"`) {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, body)
	}
	// A page of another origin: its preflight and its request are refused.
	for _, method := range []string{http.MethodOptions, http.MethodPost} {
		resp, _ = do(method, ep.MCP, rpc, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST",
			"Content-Type", "application/json", "Authorization", "Bearer "+tok.AccessToken)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("other origin, %s: %d ACAO %q", method, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}
