package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const noTokenChallenge = `Bearer scope="mcp", resource_metadata="` + metadataURL + `"`

func withPublic(po PublicOperations) func(*Config) {
	return func(c *Config) { c.Operations.Public = po }
}

var testPublic = PublicOperations{
	Methods:   []string{"initialize", "ping", "server/discover", "prompts/list"},
	Tools:     []string{"hello"},
	Prompts:   []string{"intro"},
	Resources: []string{"file:///public/readme"},
}

// principalProbe answers 200 with a JSON-RPC response to the request
// (its id echoed) whose result names "anonymous", the subject, or "none"
// (read back by probed).
func principalProbe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFromContext(r.Context())
		who := "none"
		switch {
		case !ok:
		case p.Anonymous:
			who = "anonymous:" + p.ID()
		default:
			who = "sub:" + p.Subject
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Body != nil {
			_ = json.NewDecoder(r.Body).Decode(&req)
		}
		if req.ID == nil {
			req.ID = json.RawMessage("null")
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]string{"principal": who}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
}

// probed returns the principal a principalProbe answer names, or body
// itself when it is not one.
func probed(body string) string {
	var v struct {
		Result struct {
			Principal string `json:"principal"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(body), &v) != nil || v.Result.Principal == "" {
		return body
	}
	return v.Result.Principal
}

func TestPublicOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, withPublic(testPublic))
	valid := f.token(t, "mcp", "tools:read", "tools:call")
	noScope := f.token(t)
	h := f.m.Handler(principalProbe())
	type tc struct {
		name          string
		req           func() *http.Request
		status        int
		wwwAuth, body string
	}
	post := func(rev, method, name, token string) func() *http.Request {
		return func() *http.Request { return rpcRequest(rev, method, name, token) }
	}
	raw := func(method, body string, hdr ...string) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest(method, resource, strings.NewReader(body))
			for i := 0; i+1 < len(hdr); i += 2 {
				r.Header.Set(hdr[i], hdr[i+1])
			}
			return r
		}
	}
	cases := []tc{}
	for _, rev := range []string{legacyRev, modernRev} {
		cases = append(cases,
			tc{rev + " public method", post(rev, "prompts/list", "", ""), 200, "", "anonymous:" + anonymousID},
			tc{rev + " public initialize", post(rev, "initialize", "", ""), 200, "", "anonymous:" + anonymousID},
			tc{rev + " public tool", post(rev, "tools/call", "hello", ""), 200, "", "anonymous:" + anonymousID},
			tc{rev + " public prompt", post(rev, "prompts/get", "intro", ""), 200, "", "anonymous:" + anonymousID},
			tc{rev + " public resource", post(rev, "resources/read", "file:///public/readme", ""), 200, "", "anonymous:" + anonymousID},
			tc{rev + " other tool", post(rev, "tools/call", "get_weather", ""), 401, noTokenChallenge, ""},
			tc{rev + " other method", post(rev, "tools/list", "", ""), 401, noTokenChallenge, ""},
			tc{rev + " other prompt", post(rev, "prompts/get", "secret_prompt", ""), 401, noTokenChallenge, ""},
			tc{rev + " other resource", post(rev, "resources/read", "file:///public/readme2", ""), 401, noTokenChallenge, ""},
			tc{rev + " public tool, valid token", post(rev, "tools/call", "hello", valid), 200, "", "sub:user-1"},
			tc{rev + " public tool, token without scopes", post(rev, "tools/call", "hello", noScope), 200, "", "sub:user-1"},
			tc{rev + " public tool, bad token", post(rev, "tools/call", "hello", "garbage"), 401, "", ""},
		)
	}
	cases = append(cases,
		tc{"GET is never public", raw(http.MethodGet, ""), 401, noTokenChallenge, ""},
		tc{"DELETE is never public", raw(http.MethodDelete, ""), 401, noTokenChallenge, ""},
		// The protocol answers that depend only on the request's bytes are
		// the ones a token would get (issue 24): before any 401.
		tc{"empty body", raw(http.MethodPost, ""), 400, "", bodyParseError},
		tc{"not JSON", raw(http.MethodPost, "a=b", "Content-Type", "application/x-www-form-urlencoded"), 400, "", bodyParseError},
		tc{"batch of public", raw(http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), 400, "", bodyBatch},
		tc{"duplicate method", raw(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`), 400, "", bodyInvalidMessage},
		tc{"too large", raw(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("a", 2000)+`"}}`), 413, "", bodyTooLarge},
		tc{"header mismatch", raw(http.MethodPost, rpcBody(modernRev, "tools/list", ""), "MCP-Protocol-Version", modernRev, "Mcp-Method", "tools/call"), 400, "",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`},
		tc{"2026-07-28 Mcp-Name mismatch of a protected tool", raw(http.MethodPost, rpcBody(modernRev, "tools/call", "get_weather"), "MCP-Protocol-Version", modernRev,
			"Mcp-Method", "tools/call", "Mcp-Name", "hello"), 400, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`},
		tc{"2026-07-28 without _meta protocol version", raw(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, "MCP-Protocol-Version", modernRev,
			"Mcp-Method", "tools/list"), 400, "", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params"}}`},
		tc{"Basic scheme is not anonymous", raw(http.MethodPost, rpcBody(legacyRev, "ping", ""), "Authorization", "Basic dXNlcjpwYXNz"), 401, noTokenChallenge, ""},
		tc{"malformed bearer", raw(http.MethodPost, rpcBody(legacyRev, "ping", ""), "Authorization", "Bearer"), 400, "", ""},
		tc{"query token", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, resource+"?access_token=x", strings.NewReader(rpcBody(legacyRev, "ping", "")))
		}, 400, "", ""},
		tc{"ping", raw(http.MethodPost, rpcBody(legacyRev, "ping", "")), 200, "", "anonymous:" + anonymousID},
		tc{"origin refused first", raw(http.MethodPost, rpcBody(legacyRev, "ping", ""), "Origin", "https://evil.example"), 403, "", ""},
	)
	small := f.with(t, func(c *Config) { c.Operations.Public = testPublic; c.MaxBodyBytes = 1000 })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hh := h
			if c.name == "too large" {
				hh = small.m.Handler(principalProbe())
			}
			w := httptest.NewRecorder()
			hh.ServeHTTP(w, c.req())
			if w.Code != c.status {
				t.Fatalf("status %d, want %d; body %s", w.Code, c.status, w.Body)
			}
			if c.wwwAuth != "" {
				if got := w.Header().Get("WWW-Authenticate"); got != c.wwwAuth {
					t.Errorf("WWW-Authenticate = %q, want %q", got, c.wwwAuth)
				}
			}
			if c.body != "" && probed(w.Body.String()) != c.body {
				t.Errorf("body %q, want %q", w.Body, c.body)
			}
		})
	}
}

// TestPublicDefault: without Public, a tokenless request is refused before
// its body is read, as before.
func TestPublicDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := rpcRequest(legacyRev, "ping", "", "")
	body := &countingBody{r: r.Body}
	r.Body = body
	w := httptest.NewRecorder()
	f.m.Handler(principalProbe()).ServeHTTP(w, r)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != noTokenChallenge || body.n != 0 {
		t.Errorf("status %d, challenge %q, %d body bytes read; want 401, %q, 0", w.Code, w.Header().Get("WWW-Authenticate"), body.n, noTokenChallenge)
	}
	// A malformed 2026-07-28 request too: with no public operation the
	// 401 comes first, before the body is read.
	r = httptest.NewRequest(http.MethodPost, resource, strings.NewReader(rpcBody(modernRev, "tools/list", "")))
	r.Header.Set("MCP-Protocol-Version", modernRev)
	r.Header.Set("Mcp-Method", "tools/call")
	body = &countingBody{r: r.Body}
	r.Body = body
	w = httptest.NewRecorder()
	f.m.Handler(principalProbe()).ServeHTTP(w, r)
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != noTokenChallenge || body.n != 0 {
		t.Errorf("malformed 2026-07-28: status %d, challenge %q, %d body bytes read; want 401, %q, 0", w.Code, w.Header().Get("WWW-Authenticate"), body.n, noTokenChallenge)
	}
}

type countingBody struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
func (c *countingBody) Close() error { return nil }

// TestPublicAnonymousRefusals: RequireScopes and Challenge answer an
// anonymous principal with the 401 challenge, never a step-up 403.
func TestPublicAnonymousRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, withPublic(testPublic))
	for name, h := range map[string]http.Handler{
		"RequireScopes": f.m.Handler(f.m.RequireScopes("admin")(principalProbe())),
		"Challenge": f.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.m.Challenge(w, r, errTenantMismatch)
		})),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, rpcRequest(legacyRev, "tools/call", "hello", ""))
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") != noTokenChallenge {
			t.Errorf("%s: %d %q, want 401 %q", name, w.Code, w.Header().Get("WWW-Authenticate"), noTokenChallenge)
		}
	}
}

func TestPublicDecision(t *testing.T) {
	t.Parallel()
	var got []Decision
	f := newFixture(t, func(c *Config) {
		c.Operations.Public = testPublic
		c.OnDecision = func(_ context.Context, d Decision) { got = append(got, d) }
	})
	h := f.m.Handler(principalProbe())
	h.ServeHTTP(httptest.NewRecorder(), rpcRequest(legacyRev, "tools/call", "hello", ""))
	h.ServeHTTP(httptest.NewRecorder(), rpcRequest(legacyRev, "tools/call", "get_weather", ""))
	if len(got) != 2 {
		t.Fatalf("%d decisions", len(got))
	}
	if d := got[0]; d.Status != 0 || d.Reason != reasonPublic || d.Method != "tools/call" || d.Name != "hello" || d.Principal == nil || !d.Principal.Anonymous {
		t.Errorf("public decision = %+v", d)
	}
	if d := got[1]; d.Status != 401 || d.Reason != reasonNoToken || d.Name != "get_weather" || d.Principal != nil {
		t.Errorf("refusal = %+v", d)
	}
}

func TestPublicConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for name, po := range map[string]OperationPolicy{
		"tools/call method":     {Public: PublicOperations{Methods: []string{"tools/call"}}},
		"resources/read method": {Public: PublicOperations{Methods: []string{"resources/read"}}},
		"empty method":          {Public: PublicOperations{Methods: []string{""}}},
		"method with scopes":    {Methods: map[string][]string{"tools/list": {"x"}}, Public: PublicOperations{Methods: []string{"tools/list"}}},
		"tool with scopes":      {Tools: map[string][]string{"t": {"x"}}, Public: PublicOperations{Tools: []string{"t"}}},
		"prompt with scopes":    {Prompts: map[string][]string{"p": {"x"}}, Public: PublicOperations{Prompts: []string{"p"}}},
		"empty tool":            {Public: PublicOperations{Tools: []string{""}}},
		"resource exact scopes": {Resources: []ResourceRule{{URI: "file:///a/b", Scopes: []string{"x"}}}, Public: PublicOperations{Resources: []string{"file:///a/b"}}},
		"empty resource":        {Public: PublicOperations{Resources: []string{""}}},
	} {
		cfg := f.cfg
		cfg.Operations = po
		if _, err := New(cfg); !errors.Is(err, errConfig) {
			t.Errorf("%s: New = %v, want errConfig", name, err)
		}
	}
}

func TestPermits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.Operations.Public = testPublic })
	deny := f.with(t, func(c *Config) { c.Operations.DenyUnlisted = true; c.Operations.Public = testPublic })
	anon := &Principal{Anonymous: true}
	user := func(scopes ...string) *Principal { return &Principal{Subject: "u", Scopes: scopes} }
	for _, c := range []struct {
		m            *Middleware
		p            *Principal
		method, name string
		want         bool
	}{
		{f.m, nil, "tools/call", "hello", true},
		{f.m, anon, "tools/call", "hello", true},
		{f.m, anon, "tools/call", "get_weather", false},
		{f.m, anon, "prompts/list", "", true},
		{f.m, anon, "tools/list", "", false},
		{f.m, user("mcp"), "tools/list", "", false},
		{f.m, user("mcp", "tools:read"), "tools/list", "", true},
		{f.m, user("mcp", "tools:call", "weather:read"), "tools/call", "get_weather", true},
		{f.m, user("mcp", "tools:call"), "tools/call", "get_weather", false},
		{f.m, user("mcp", "tools:call"), "tools/call", "unlisted", true},
		{deny.m, user("mcp", "tools:call"), "tools/call", "unlisted", false},
		{deny.m, anon, "tools/call", "hello", true},
		{f.m, user("repo:admin", "mcp", "tools:call"), "tools/call", "push", true}, // ScopeImplies
		{f.m, user("mcp", "res:read", "files:read"), "resources/read", "file:///projects/a", true},
		{f.m, user("mcp", "res:read", "files:read"), "resources/read", "file:///projects/secret/a", false},
		{f.m, user("mcp", "res:read", "files:read"), "resources/read", "file:///projects/../secret/a", false},
		{f.m, user("mcp", "prompts:read"), "prompts/get", "secret_prompt", false},
		{f.m, user("mcp"), "ping", "", true},
		{f.m, user(), "ping", "", true}, // public
		{f.m, user(), "completion/complete", "", false},
	} {
		if got := c.m.Permits(c.p, c.method, c.name); got != c.want {
			t.Errorf("Permits(%+v, %s, %q) = %v, want %v", c.p, c.method, c.name, got, c.want)
		}
	}
}
