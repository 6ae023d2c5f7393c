package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// listAnswerMiddleware is a middleware whose token holds "mcp" only:
// tool "admin" needs "admin", tool "open" is public, the others need "mcp".
func listAnswerMiddleware(t testing.TB, mode ListMode) *Middleware {
	return newFake(t, fakeValidator{claims: fakeClaims("mcp")}, func(c *Config) {
		c.Operations.Tools = map[string][]string{"admin": {"admin"}}
		c.Operations.Public = PublicOperations{Tools: []string{"open"}}
		c.Lists = mode
	})
}

// serveList sends a tools/list request with the raw id through m to a
// handler answering with header h and body, and returns the answer.
func serveList(t *testing.T, m *Middleware, id, accept string, h map[string]string, status int, body string) *httptest.ResponseRecorder {
	t.Helper()
	var gotAE []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAE = r.Header.Values("Accept-Encoding")
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range h {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		for i := 0; i < len(body); i += 7 { // several writes
			_, _ = io.WriteString(w, body[i:min(i+7, len(body))])
		}
	})
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", legacyRev)
	r.Header.Set("Authorization", "Bearer x")
	if accept != "" {
		r.Header.Set("Accept-Encoding", accept)
	}
	w := httptest.NewRecorder()
	m.Handler(next).ServeHTTP(w, r)
	if len(gotAE) != 0 {
		t.Errorf("the server got Accept-Encoding %q for a list", gotAE)
	}
	return w
}

const jsonType = "application/json"

// TestListAnswers: the answer layer shows a tools/list answer, JSON or
// SSE, as listEntry decides; a response matched by id value whatever its
// spelling; another id, an unreadable answer and a malformed list fail
// closed with their documented answers.
func TestListAnswers(t *testing.T) {
	t.Parallel()
	const upstream = `{"name":"admin"},{"name":"open","_meta":{"x":1}},{"name":"notes","securitySchemes":[],"_meta":null},{"name":"bare","_meta":{}},7,{"title":"no name"}`
	hide := `"cacheScope":"private","tools":[` +
		`{"securitySchemes":[{"type":"noauth"}],"name":"open","_meta":{"securitySchemes":[{"type":"noauth"}],"x":1}},` +
		`{"name":"notes","securitySchemes":[{"type":"oauth2","scopes":["mcp"]}],"_meta":{"securitySchemes":[{"type":"oauth2","scopes":["mcp"]}]}},` +
		`{"securitySchemes":[{"type":"oauth2","scopes":["mcp"]}],"name":"bare","_meta":{"securitySchemes":[{"type":"oauth2","scopes":["mcp"]}]}}]`
	off := `"cacheScope":"private","tools":[{"name":"admin"},{"name":"open","_meta":{"x":1}},{"name":"notes","securitySchemes":[],"_meta":null},{"name":"bare","_meta":{}}]`
	tests := []struct {
		name       string
		mode       ListMode
		id, echo   string // the request's id, the response's
		header     map[string]string
		status     int
		body       string
		wantStatus int
		want       string
	}{
		{"hide JSON", ListHide, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{` + hide + `}}`},
		{"off JSON", ListOff, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + upstream + `],"cacheScope":"public"}}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"admin"},{"name":"open","_meta":{"x":1}},{"name":"notes","securitySchemes":[],"_meta":null},{"name":"bare","_meta":{}}],"cacheScope":"private"}}`},
		{"off, cacheScope first", ListOff, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"public","tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{` + off + `}}`},
		{"escaped string id", ListHide, `"\u0061"`, `"a"`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":"a","result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":"a","result":{` + hide + `}}`},
		{"1.0 echoed 1", ListHide, `1.0`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{` + hide + `}}`},
		{"-0 echoed 0", ListHide, `-0`, `0`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":0,"result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":0,"result":{` + hide + `}}`},
		{"2^53+1 echoed as float", ListHide, `9007199254740993`, `9007199254740992`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":9007199254740992,"result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":9007199254740992,"result":{` + hide + `}}`},
		{"SSE", ListHide, `1e0`, `1`, map[string]string{"Content-Type": "text/event-stream"}, 200,
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[" + upstream + "]}}\n\n", 200,
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{" + hide + "}}\n\n"},
		{"another id", ListHide, `1`, `2`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":2,"result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}`},
		{"string for number", ListHide, `1`, `"1"`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":"1","result":{"tools":[` + upstream + `]}}`, 200,
			`{"jsonrpc":"2.0","id":"1","error":{"code":-32603,"message":"Internal error"}}`},
		{"error response passes", ListHide, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`, 200,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`},
		{"gzip", ListOff, `1`, `1`, map[string]string{"Content-Type": jsonType, "Content-Encoding": "gzip"}, 200, "\x1f\x8b\x08", 502, "Bad Gateway\n"},
		{"unknown type", ListOff, `1`, `1`, map[string]string{"Content-Type": "application/x-ndjson"}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + upstream + `]}}`, 502, "Bad Gateway\n"},
		{"no type", ListOff, `1`, `1`, nil, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + upstream + `]}}`, 502, "Bad Gateway\n"},
		{"tools not an array", ListOff, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"admin"}}}`, 502, "Bad Gateway\n"},
		{"case variant member", ListOff, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"Tools":[{"name":"admin"}]}}`, 502, "Bad Gateway\n"},
		{"case variant name", ListHide, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"open","Name":"admin"}]}}`, 502, "Bad Gateway\n"},
		{"null tools", ListHide, `1`, `1`, map[string]string{"Content-Type": jsonType}, 200, `{"jsonrpc":"2.0","id":1,"result":{"tools":null}}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","tools":[]}}`},
		{"404 text", ListHide, `1`, `1`, map[string]string{"Content-Type": "text/plain"}, 404, "Session not found\n", 502, "Bad Gateway\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := listAnswerMiddleware(t, tc.mode)
			w := serveList(t, m, tc.id, "gzip", tc.header, tc.status, tc.body)
			if w.Code != tc.wantStatus || w.Body.String() != tc.want {
				t.Errorf("got %d\n%s\nwant %d\n%s", w.Code, w.Body, tc.wantStatus, tc.want)
			}
		})
	}
}

// FuzzListRewrite: whatever list answer a server sends, the answer layer
// refuses it or returns valid JSON that lists no entry the token may not
// call (read by a lenient reader too), and rewriting that again changes
// nothing (the annotation replaces, never accumulates).
func FuzzListRewrite(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"admin"},{"name":"open","_meta":{"x":1}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","securitySchemes":[],"_meta":null},{}, 3]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[ { "name" : "a" , "_meta" : { } } ]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"p","_meta":{"securitySchemes":1}}]}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{"cacheScope":"public","tools":[{"name":"\u0061dmin"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	m := listAnswerMiddleware(f, ListHide)
	p := newPrincipal(fakeClaims("mcp"))
	f.Fuzz(func(t *testing.T, msg []byte, prompts bool) {
		k := listKindOf([]byte(methodToolsList))
		if prompts {
			k = listKindOf([]byte(methodPromptsList))
		}
		aw := &answerWriter{m: m, ctx: context.Background(), p: p, hdr: http.Header{}, entries: k, reqID: []byte("1")}
		out, err := aw.Rewrite(msg)
		if err != nil || out == nil {
			return
		}
		if !bytes.Equal(out, msg) && strictjson.Valid(out) != nil {
			t.Fatalf("rewrite of %q is not valid JSON: %q", msg, out)
		}
		var v struct {
			Result struct {
				Tools []struct {
					Name any `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if !prompts && json.Unmarshal(out, &v) == nil && strictjson.Valid(msg) == nil {
			for _, e := range v.Result.Tools {
				if e.Name == "admin" {
					t.Fatalf("listed admin: %q from %q", out, msg)
				}
			}
		}
		again, err := aw.Rewrite(out)
		if err != nil {
			t.Fatalf("the rewrite %q of %q is refused: %v", out, msg, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("rewrite not idempotent:\n%q\n%q", out, again)
		}
	})
}

// TestMayConcernTasks: the shortcut that lets an answer pass unread must
// say yes to every spelling under which some reader sees a task member
// or method, and may say no only to text that names none. The case
// variants failed when it searched for "task" byte for byte
// (FuzzTaskRewrite found `{"result":{"tAsks":[…]}}`).
func TestMayConcernTasks(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{`{"result":{"tasks":[]}}`, true},
		{`{"result":{"tAsks":[{"TaskId":"theirs"}]}}`, true},
		{`{"result":{"TASKS":[]}}`, true},
		{`{"method":"notifications/TASKS/status"}`, true},
		{`{"result":{"ta\u0073ks":[]}}`, true},
		{"{\"result\":{\"ta\u017fks\":[]}}", true}, // U+017F folds to s
		{"{\"result\":{\"tas\u212as\":[]}}", true}, // U+212A folds to k
		{`{"result":{"tools":[{"name":"mask"}]}}`, false},
		{`{"result":{"content":[{"type":"text","text":"kkk tas k"}]}}`, false},
		{`task`, true},
		{`tas`, false},
		{`k`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := mayConcernTasks([]byte(tt.msg)); got != tt.want {
			t.Errorf("mayConcernTasks(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}
