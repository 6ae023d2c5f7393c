package proxy_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestLists: with lists: hide, the proxy removes from tools/list answers,
// SSE (go-sdk upstream) and JSON alike, the tools the token may not call;
// with the default (annotate) every obtainable tool stays.
func TestLists(t *testing.T) {
	for _, mode := range []string{"hide", ""} {
		want := []string{"admin_only", "whoami"}
		if mode == "hide" {
			want = []string{"whoami"}
		}
		t.Run("sse/"+mode, func(t *testing.T) {
			e := newTestEnv(t, envOptions{route: func(r *proxy.Route) { r.Lists = mode }})
			ctx := testContext(t)
			cs := e.connect(ctx, t, e.token(t, "alice", baseScope), nil)
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range res.Tools {
				got = append(got, tl.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("tools = %v, want %v", got, want)
			}
		})
		t.Run("json/"+mode, func(t *testing.T) {
			list := `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"whoami","inputSchema":{"type":"object"}},{"name":"admin_only","inputSchema":{"type":"object"}}]}}`
			e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, list)
			}, func(c *proxy.Config) { c.Routes[0].Lists = mode })
			resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, auth)
			body := readAll(t, resp)
			if strings.Contains(body, "admin_only") != slices.Contains(want, "admin_only") || !strings.Contains(body, `"whoami"`) {
				t.Errorf("tools/list = %s, want %v", body, want)
			}
		})
	}
}

// TestListAnnotations: the proxy annotates each listed entry with the
// scopes its call needs (SEP-1488): a go-sdk client through the proxy
// sees _meta.securitySchemes on every tool of the go-sdk upstream's SSE
// answer; in a JSON answer a tool also gets the top-level
// securitySchemes, an upstream's own annotation is replaced and its other
// _meta members kept; prompts get _meta only; lists: off annotates
// nothing.
func TestListAnnotations(t *testing.T) {
	t.Run("go-sdk upstream and client", func(t *testing.T) {
		e := newTestEnv(t, envOptions{})
		ctx := testContext(t)
		cs := e.connect(ctx, t, e.token(t, "alice", baseScope), nil)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"whoami":     `[{"scopes":["mcp:tools"],"type":"oauth2"}]`, // as a map: sorted
			"admin_only": `[{"scopes":["mcp:tools","mcp:admin"],"type":"oauth2"}]`,
		}
		if len(res.Tools) != len(want) {
			t.Fatalf("tools = %d, want %d", len(res.Tools), len(want))
		}
		for _, tl := range res.Tools {
			got, _ := json.Marshal(tl.Meta["securitySchemes"])
			if string(got) != want[tl.Name] {
				t.Errorf("%s: _meta.securitySchemes = %s, want %s", tl.Name, got, want[tl.Name])
			}
		}
	})
	const upstreamList = `{"jsonrpc":"2.0","id":3,"result":{"tools":[` +
		`{"name":"whoami","inputSchema":{"type":"object"}},` +
		`{"name":"admin_only","securitySchemes":[{"type":"noauth"}],"_meta":{"vendor/x":1,"securitySchemes":[{"type":"noauth"}]},"inputSchema":{"type":"object"}},` +
		`{"name":"meta_null","_meta":null}` +
		`]}}`
	tests := []struct {
		name, mode, method, list, want string
	}{
		{"tools", "", "tools/list", upstreamList, `{"jsonrpc":"2.0","id":3,"result":{"cacheScope":"private","tools":[` +
			`{"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools"]}],"_meta":{"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools"]}]},"name":"whoami","inputSchema":{"type":"object"}},` +
			`{"name":"admin_only","securitySchemes":[{"type":"oauth2","scopes":["mcp:tools","mcp:admin"]}],"_meta":{"vendor/x":1,"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools","mcp:admin"]}]},"inputSchema":{"type":"object"}},` +
			`{"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools"]}],"name":"meta_null","_meta":{"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools"]}]}}` +
			`]}}`},
		{"off", "off", "tools/list", upstreamList, strings.Replace(upstreamList, `"result":{`, `"result":{"cacheScope":"private",`, 1)},
		{"prompts", "", "prompts/list", `{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"name":"p"},{}]}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"cacheScope":"private","prompts":[{"_meta":{"securitySchemes":[{"type":"oauth2","scopes":["mcp:tools"]}]},"name":"p"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, auth := rawEnv(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.list)
			}, func(c *proxy.Config) { c.Routes[0].Lists = tt.mode })
			resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":3,"method":"`+tt.method+`"}`, auth)
			if body := readAll(t, resp); resp.StatusCode != 200 || body != tt.want {
				t.Errorf("%s = %d\n%s\nwant\n%s", tt.method, resp.StatusCode, body, tt.want)
			}
		})
	}
}

// gzipAnswers compresses every answer of h for a request that accepts
// gzip, as a compressing front end of an upstream would, and records the
// Accept-Encoding of each request.
func gzipAnswers(h http.Handler, seen *[]string, mu *sync.Mutex) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*seen = append(*seen, r.Method+" "+strings.Join(r.Header.Values("Accept-Encoding"), ","))
		mu.Unlock()
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		h.ServeHTTP(gzipWriter{w, zw}, r)
	})
}

type gzipWriter struct {
	http.ResponseWriter
	zw *gzip.Writer
}

func (g gzipWriter) Write(p []byte) (int, error) { return g.zw.Write(p) }
func (g gzipWriter) Flush() {
	_ = g.zw.Flush()
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestNoAcceptEncodingUpstream: the proxy asks the upstream for identity
// bodies on every request (POST of every method, GET, DELETE), so that a
// compressing upstream's list answers, JSON or SSE, are still rewritten
// (a compressed one could not be read and would be a 502).
func TestNoAcceptEncodingUpstream(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	e := newTestEnv(t, envOptions{
		route: func(r *proxy.Route) { r.Lists = "hide" },
		upstream: func(t *testing.T, jwksURL, issuer, audience string) http.Handler {
			return gzipAnswers(goSDKUpstream(t, jwksURL, issuer, audience, false), &seen, &mu)
		},
	})
	ctx := testContext(t)
	gz := http.Header{"Accept-Encoding": {"gzip, deflate, br"}}
	cs := e.connect(ctx, t, e.token(t, "alice", baseScope), gz)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools through a compressing upstream: %v", err)
	}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
	}
	if !slices.Equal(got, []string{"whoami"}) {
		t.Errorf("tools = %v, want [whoami] (admin_only hidden)", got)
	}
	if w := callWhoami(ctx, t, cs, "whoami"); w.Subject != "alice" {
		t.Errorf("whoami = %+v", w)
	}
	if err := cs.Close(); err != nil {
		t.Logf("Close: %v", err)
	}

	// A JSON answer, raw: the client asked for gzip; it gets the rewritten
	// answer uncompressed.
	auth := http.Header{"Authorization": {"Bearer " + e.token(t, "alice", baseScope)}, "Accept-Encoding": {"gzip"}}
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	resp := do(t, "POST", e.resource, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, auth)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || !strings.Contains(body, `"protocolVersion"`) {
		t.Errorf("initialize: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) <= n {
		t.Fatalf("the upstream saw no raw request")
	}
	methods := map[string]bool{}
	for _, s := range seen {
		m, enc, _ := strings.Cut(s, " ")
		methods[m] = true
		if enc != "" {
			t.Errorf("upstream request %s carried Accept-Encoding %q", m, enc)
		}
	}
	for _, m := range []string{"POST", "GET", "DELETE"} {
		if !methods[m] {
			t.Errorf("the upstream saw no %s (seen %v)", m, seen)
		}
	}
}
