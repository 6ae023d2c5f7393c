package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/golden"
	"github.com/mcpguard/mcpguard/validate"
)

// answerCase drives Handler with one request and compares the whole
// response with testdata/<name>.golden.
type answerCase struct {
	name       string
	mutate     func(*Config) // nil: the shared fixture
	req        func(t *testing.T, f *fixture) *http.Request
	wantStatus int
}

func get(headers ...string) func(t *testing.T, f *fixture) *http.Request {
	return func(t *testing.T, f *fixture) *http.Request {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Add(headers[i], headers[i+1])
		}
		return r
	}
}

// withToken is a GET with a token for scopes, changed by at most one spec
// (whose own Scopes win).
func withToken(scopes []string, spec ...authtest.Token) func(t *testing.T, f *fixture) *http.Request {
	return func(t *testing.T, f *fixture) *http.Request {
		tk := oneSpec(t, spec)
		if tk.Scopes == nil {
			tk.Scopes = append([]string{}, scopes...)
		}
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer "+f.iss.Token(t, tk))
		return r
	}
}

func rpc(rev, method, name string, scopes ...string) func(t *testing.T, f *fixture) *http.Request {
	return func(t *testing.T, f *fixture) *http.Request {
		return rpcRequest(rev, method, name, f.token(t, scopes...))
	}
}

// rawPost sends body with a valid all-scopes token and extra headers.
func rawPost(body string, headers ...string) func(t *testing.T, f *fixture) *http.Request {
	return func(t *testing.T, f *fixture) *http.Request {
		r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:all"))
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Add(headers[i], headers[i+1])
		}
		return r
	}
}

// answerCases are the requests of TestAnswers, one or more per row of
// the table in docs/answers.md (Every answer a client can see); TestDecisions replays them.
func answerCases() []answerCase {
	cases := []answerCase{
		// Origin (403, no challenge).
		{name: "origin_denied", req: get("Origin", "http://evil.example"), wantStatus: 403},
		{name: "origin_null_denied", req: get("Origin", "null"), wantStatus: 403},
		{name: "origin_repeated_denied", req: get("Origin", "https://mcp.example.com", "Origin", "https://mcp.example.com"), wantStatus: 403},
		// Bearer extraction.
		{name: "no_token", req: get(), wantStatus: 401},
		{name: "basic_scheme", req: get("Authorization", "Basic dXNlcjpwYXNz"), wantStatus: 401},
		{name: "dpop_scheme", req: get("Authorization", "DPoP abc.def.ghi"), wantStatus: 401},
		{name: "two_authorization_headers", req: get("Authorization", "Bearer a", "Authorization", "Bearer b"), wantStatus: 400},
		{name: "bearer_without_token", req: get("Authorization", "Bearer"), wantStatus: 400},
		{name: "bearer_bad_chars", req: get("Authorization", "Bearer a,b"), wantStatus: 400},
		{name: "bearer_two_tokens", req: get("Authorization", "Bearer a b"), wantStatus: 400},
		{name: "query_token_alone", req: func(t *testing.T, f *fixture) *http.Request {
			return httptest.NewRequest(http.MethodGet, resource+"?access_token="+f.token(t, "mcp"), nil)
		}, wantStatus: 400},
		{name: "query_token_and_header", req: func(t *testing.T, f *fixture) *http.Request {
			tok := f.token(t, "mcp")
			r := httptest.NewRequest(http.MethodGet, resource+"?access_token="+tok, nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			return r
		}, wantStatus: 400},
		// Token validation.
		{name: "token_expired", req: withToken([]string{"mcp"}, authtest.Expired()), wantStatus: 401},
		{name: "token_wrong_audience", req: withToken([]string{"mcp"}, authtest.WrongAudience()), wantStatus: 401},
		{name: "token_wrong_issuer", req: withToken([]string{"mcp"}, authtest.WrongIssuer()), wantStatus: 401},
		{name: "token_unknown_kid", req: withToken([]string{"mcp"}, authtest.Token{ForeignKey: true, KID: "unknown-kid"}), wantStatus: 401},
		{name: "token_garbage", req: get("Authorization", "Bearer not.a.jwt"), wantStatus: 401},
		// Success.
		{name: "ok_get", req: withToken([]string{"mcp"}), wantStatus: 200},
		{name: "ok_origin_resource", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"mcp"})(t, f)
			r.Header.Set("Origin", "https://MCP.example.com:443")
			return r
		}, wantStatus: 200},
		{name: "ok_origin_listed", mutate: func(c *Config) { c.AllowedOrigins = []string{"http://localhost:6274"} }, req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"mcp"})(t, f)
			r.Header.Set("Origin", "http://localhost:6274")
			return r
		}, wantStatus: 200},
		{name: "ok_origin_any", mutate: func(c *Config) { c.AllowedOrigins = []string{"*"} }, req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"mcp"})(t, f)
			r.Header.Set("Origin", "http://evil.example")
			return r
		}, wantStatus: 200},
		{name: "ok_modern_tools_call", req: rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"), wantStatus: 200},
		{name: "ok_legacy_tools_call", req: rpc(legacyRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"), wantStatus: 200},
		{name: "ok_unknown_tool_method_scopes", req: rpc(modernRev, "tools/call", "no_such_tool", "mcp", "tools:call"), wantStatus: 200},
		{name: "ok_unknown_method_base_scopes", req: rpc(modernRev, "ping", "", "mcp"), wantStatus: 200},
		{name: "ok_response_message_base_scopes", req: rawPost(`{"jsonrpc":"2.0","id":7,"result":{}}`), wantStatus: 200},
		{name: "ok_notification", req: rawPost(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), wantStatus: 200},
		{name: "ok_hierarchy_admin_implies_write", req: rpc(modernRev, "tools/call", "push", "mcp", "tools:call", "repo:admin"), wantStatus: 200},
		{name: "ok_hierarchy_all", req: rpc(modernRev, "tools/list", "", "mcp:all"), wantStatus: 200},
		{name: "ok_base64_mcp_name", req: func(t *testing.T, f *fixture) *http.Request {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Hello, 世界","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
			return rawPost(body, "MCP-Protocol-Version", modernRev, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?SGVsbG8sIOS4lueVjA==?=")(t, f)
		}, wantStatus: 200},
		// Keys unavailable is tested in TestUnavailable (fake validator).
		// Body peek.
		{name: "body_too_large", mutate: func(c *Config) { c.MaxBodyBytes = 64 }, req: rpc(legacyRev, "tools/call", "get_weather", "mcp:all"), wantStatus: 413},
		{name: "body_batch", req: rawPost(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`), wantStatus: 400},
		{name: "body_not_json", req: rawPost(`{"jsonrpc":"2.0","method":`), wantStatus: 400},
		{name: "body_empty", req: rawPost(``), wantStatus: 400},
		{name: "body_not_object", req: rawPost(`"tools/call"`), wantStatus: 400},
		{name: "body_duplicate_method", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`), wantStatus: 400},
		{name: "body_case_variant_method", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`), wantStatus: 400},
		{name: "body_upper_method", req: rawPost(`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call"}`), wantStatus: 400},
		{name: "body_escaped_duplicate", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","\u006dethod":"tools/call"}`), wantStatus: 400},
		{name: "body_long_s_params", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"delete_repo"}}`), wantStatus: 400},
		{name: "body_duplicate_name", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","name":"delete_repo"}}`), wantStatus: 400},
		{name: "body_case_variant_name", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","Name":"delete_repo"}}`), wantStatus: 400},
		{name: "body_method_not_string", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":42}`), wantStatus: 400},
		{name: "body_name_not_string", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["delete_repo"]}}`), wantStatus: 400},
		{name: "body_invalid_utf8_name", req: rawPost("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"delete\xffrepo\"}}"), wantStatus: 400},
		{name: "body_dot_segment_uri", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects/%2e%2e/etc/passwd"}}`), wantStatus: 400},
		// Other spellings of protected resources (security review): each
		// would miss its rule and borrow weaker scopes.
		{name: "body_uri_empty_segment", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects//secret/keys.txt"}}`), wantStatus: 400},
		{name: "body_uri_encoded_unreserved", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects/%73ecret/keys.txt"}}`), wantStatus: 400},
		{name: "body_uri_encoded_slash", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects/secret%2Fkeys.txt"}}`), wantStatus: 400},
		{name: "body_uri_exact_encoded_dot", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///projects/myapp/config%2Ejson"}}`), wantStatus: 400},
		{name: "body_uri_upper_scheme", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"FILE:///projects/secret/keys.txt"}}`), wantStatus: 400},
		{name: "deny_unlisted_tool", mutate: func(c *Config) { c.Operations.DenyUnlisted = true }, req: rpc(modernRev, "tools/call", "no_such_tool", "mcp:all"), wantStatus: 403},
	}
	cases = append(cases, headerMismatchCases()...)
	cases = append(cases, ruleCases()...)
	return append(cases, scopeCases()...)
}

func TestAnswers(t *testing.T) {
	shared := newFixture(t, nil)
	for _, tc := range answerCases() {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh Middleware per case, so that step-up counters of one
			// case do not reach another (TestStepUp covers the bound).
			f := shared.with(t, tc.mutate)
			reached := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				echoHandler().ServeHTTP(w, r)
			})
			rec := httptest.NewRecorder()
			f.m.Handler(next).ServeHTTP(rec, tc.req(t, f))
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if want := tc.wantStatus == 200; reached != want {
				t.Errorf("next reached = %t, want %t", reached, want)
			}
			golden.Check(t, tc.name+".golden", golden.DumpResponse(rec))
		})
	}
}

// headerMismatchCases are the MCP 2026-07-28 §Server Validation failures:
// 400 with JSON-RPC -32020.
func headerMismatchCases() []answerCase {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather",` + meta + `}}`
	list := `{"jsonrpc":"2.0","id":"req-7","method":"tools/list","params":{` + meta + `}}`
	read := `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///projects/myapp/config.json",` + meta + `}}`
	v := "MCP-Protocol-Version"
	mm := func(name, body string, headers ...string) answerCase {
		return answerCase{name: "mismatch_" + name, req: rawPost(body, headers...), wantStatus: 400}
	}
	return []answerCase{
		mm("method_differs", call, v, modernRev, "Mcp-Method", "tools/list", "Mcp-Name", "get_weather"),
		mm("method_case", list, v, modernRev, "Mcp-Method", "TOOLS/LIST"),
		mm("method_missing", list, v, modernRev),
		mm("method_repeated", list, v, modernRev, "Mcp-Method", "tools/list", "Mcp-Method", "tools/list"),
		mm("name_missing", call, v, modernRev, "Mcp-Method", "tools/call"),
		mm("name_differs", call, v, modernRev, "Mcp-Method", "tools/call", "Mcp-Name", "delete_repo"),
		mm("name_base64_differs", call, v, modernRev, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?ZGVsZXRlX3JlcG8=?="),
		mm("name_base64_invalid", call, v, modernRev, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?not base64!?="),
		mm("name_uri_differs", read, v, modernRev, "Mcp-Method", "resources/read", "Mcp-Name", "file:///projects/secret/key"),
		mm("version_differs_meta", list, v, "2026-08-01", "Mcp-Method", "tools/list"),
		mm("version_missing_in_body", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, v, modernRev, "Mcp-Method", "tools/list"),
		mm("version_header_missing", list, "Mcp-Method", "tools/list"),
		mm("version_repeated", list, v, modernRev, v, modernRev, "Mcp-Method", "tools/list"),
		mm("legacy_method_header_differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_repo"}}`, v, legacyRev, "Mcp-Method", "tools/list"),
		mm("id_object_echoed_as_null", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{`+meta+`}}`, v, modernRev),
	}
}

// scopeCases cover every 403 branch, for both revisions.
func scopeCases() []answerCase {
	var out []answerCase
	for _, rev := range []string{legacyRev, modernRev} {
		suffix := "_" + strings.ReplaceAll(rev, "-", "")
		add := func(name string, req func(t *testing.T, f *fixture) *http.Request, mutate func(*Config)) {
			out = append(out, answerCase{name: "scope_" + name + suffix, req: req, mutate: mutate, wantStatus: 403})
		}
		add("base_missing_post", rpc(rev, "ping", "", "other"), nil)
		add("method_missing", rpc(rev, "tools/list", "", "mcp", "files:read"), nil)
		add("tool_missing", rpc(rev, "tools/call", "delete_repo", "mcp", "tools:call", "offline_access", "weather:read"), nil)
		add("tool_not_covered_by_narrower", rpc(rev, "tools/call", "delete_repo", "mcp", "tools:call", "repo:write"), nil)
		add("all_missing", rpc(rev, "tools/call", "get_weather"), nil)
		add("prompt_missing", rpc(rev, "prompts/get", "secret_prompt", "mcp", "prompts:read"), nil)
		add("resource_exact_missing", rpc(rev, "resources/read", "file:///projects/myapp/config.json", "mcp", "res:read", "files:read"), nil)
		add("resource_longest_prefix", rpc(rev, "resources/read", "file:///projects/secret/key.pem", "mcp", "res:read", "files:read"), nil)
		add("operation_only_strategy", rpc(rev, "tools/call", "delete_repo", "mcp", "tools:call", "weather:read"),
			func(c *Config) { c.LegacyScopes = ScopeOperationOnly })
		add("realm", rpc(rev, "tools/list", "", "mcp"), func(c *Config) { c.Realm = "mcp" })
	}
	// GET carries no revision body; with and without the header.
	out = append(out,
		answerCase{name: "scope_base_missing_get", req: withToken([]string{"other"}), wantStatus: 403},
		answerCase{name: "scope_base_missing_get_modern", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"other"})(t, f)
			r.Header.Set("MCP-Protocol-Version", modernRev)
			return r
		}, wantStatus: 403},
	)
	return out
}

// TestUnavailable: keys unavailable (and context errors) answer 503 with
// Retry-After and no challenge.
func TestUnavailable(t *testing.T) {
	tests := []struct {
		name, golden string
		retry        func(*Config)
	}{
		{"default", "unavailable_503", nil},
		{"retry_after_rounded_up", "unavailable_503_retry_1500ms", func(c *Config) { c.RetryAfter = 1500e6 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFake(t, fakeValidator{err: validate.ErrKeysUnavailable}, tt.retry)
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, resource, nil)
			r.Header.Set("Authorization", "Bearer abc")
			m.Handler(http.NotFoundHandler()).ServeHTTP(rec, r)
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("status = %d, want 503", rec.Code)
			}
			golden.Check(t, tt.golden+".golden", golden.DumpResponse(rec))
		})
	}
}
