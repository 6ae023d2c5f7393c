package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/proxy"
)

// listIDSpellings are JSON-RPC ids a client may give a list request that
// an SDK may echo differently (re-encoded from a number or a decoded
// string), and a batch. Whatever the echo, the answer never shows an
// entry the token may not call.
var listIDSpellings = []string{
	`1`, `"a"`, `"\u0061"`, `"\u0041"`, `1.0`, `1e0`, `1E0`, `10e-1`, `0.1e1`, `-0`, `0`, `-0.0`,
	`-1`, `-1.0`, `9007199254740993`, `-9007199254740993`, `18446744073709551617`,
	`123456789012345678901234567890`, `1e20`, `1.5`, `"\ud83d\ude00"`, `"a\"b"`, `"\/"`, `""`,
}

// The entries every server of the test offers: the open ones the token
// may call, the secret ones it may not (ListHide shows exactly what it
// may call).
var (
	listOpen   = map[string]bool{"open": true, "open_p": true, "file:///open": true, "file:///open/{x}": true, "remember": true}
	listSecret = []string{"secret", "secret_p", "file:///secret", "file:///secret/{x}", "recall"}
)

// listMethods are the list methods and their entries' member and key.
var listMethods = [][3]string{
	{"tools/list", "tools", "name"},
	{"prompts/list", "prompts", "name"},
	{"resources/list", "resources", "uri"},
	{"resources/templates/list", "resourceTemplates", "uriTemplate"},
}

// listIDPolicy makes the secret entries need a scope the token lacks.
var listIDPolicy = middleware.OperationPolicy{
	Tools:   map[string][]string{"secret": {"secret:read"}, "recall": {"secret:read"}},
	Prompts: map[string][]string{"secret_p": {"secret:read"}},
	Resources: []middleware.ResourceRule{
		{URI: "file:///secret", Scopes: []string{"secret:read"}},
		{URI: "file:///secret/", Prefix: true, Scopes: []string{"secret:read"}},
	},
}

func goSDKListServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "lists", Version: "0"}, nil)
	tool := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	for _, n := range []string{"open", "secret"} {
		mcp.AddTool(s, &mcp.Tool{Name: n}, tool)
		s.AddPrompt(&mcp.Prompt{Name: n + "_p"}, prompt)
		s.AddResource(&mcp.Resource{Name: n, URI: "file:///" + n}, read)
		s.AddResourceTemplate(&mcp.ResourceTemplate{Name: n + "_t", URITemplate: "file:///" + n + "/{x}"}, read)
	}
	return s
}

func mcpgoListServer() *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("lists", "0", mcpgoserver.WithResourceCapabilities(false, false), mcpgoserver.WithPromptCapabilities(false))
	tool := func(context.Context, mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
		return mcpgomcp.NewToolResultText("ok"), nil
	}
	prompt := func(context.Context, mcpgomcp.GetPromptRequest) (*mcpgomcp.GetPromptResult, error) {
		return &mcpgomcp.GetPromptResult{}, nil
	}
	read := func(context.Context, mcpgomcp.ReadResourceRequest) ([]mcpgomcp.ResourceContents, error) {
		return nil, nil
	}
	for _, n := range []string{"open", "secret"} {
		s.AddTool(mcpgomcp.NewTool(n), tool)
		s.AddPrompt(mcpgomcp.NewPrompt(n+"_p"), prompt)
		s.AddResource(mcpgomcp.NewResource("file:///"+n, n), read)
		s.AddResourceTemplate(mcpgomcp.NewResourceTemplate("file:///"+n+"/{x}", n+"_t"), read)
	}
	return s
}

// listBackend is a server behind mcpguard: its plain handler (no adapter).
type listBackend struct {
	name     string
	stateful bool
	tsOnly   bool // only tools/list is offered (the TypeScript server)
	handler  func(t *testing.T) http.Handler
}

func listBackends() []listBackend {
	return []listBackend{
		{name: "go-sdk stateless JSON", handler: func(*testing.T) http.Handler {
			s := goSDKListServer()
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
		}},
		{name: "go-sdk stateless SSE", handler: func(*testing.T) http.Handler {
			s := goSDKListServer()
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		}},
		{name: "go-sdk stateful SSE", stateful: true, handler: func(*testing.T) http.Handler {
			s := goSDKListServer()
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}},
		{name: "mcp-go stateless", handler: func(*testing.T) http.Handler {
			return mcpgoserver.NewStreamableHTTPServer(mcpgoListServer(), mcpgoserver.WithStateLess(true))
		}},
		{name: "mcp-go stateful", stateful: true, handler: func(*testing.T) http.Handler {
			return mcpgoserver.NewStreamableHTTPServer(mcpgoListServer())
		}},
		{name: "TypeScript SDK stateful", stateful: true, tsOnly: true, handler: func(t *testing.T) http.Handler {
			node := requireNode(t)
			u, err := url.Parse(startProc(t, nodeDir, nil, node, "ts-server.mjs"))
			if err != nil {
				t.Fatal(err)
			}
			return &httputil.ReverseProxy{
				Rewrite: func(pr *httputil.ProxyRequest) {
					pr.SetURL(u)
					pr.Out.URL.Path = u.Path
					pr.Out.Header.Del("Authorization")
				},
				FlushInterval: -1,
			}
		}},
	}
}

// listFront is a way to put mcpguard in front of a backend: it returns the
// resource URL and a token with the base scope only.
type listFront struct {
	name  string
	start func(t *testing.T, h http.Handler) (resource, token string)
}

var listFronts = []listFront{
	{"library", func(t *testing.T, h http.Handler) (string, string) {
		s := newBindServer(t, func(_ *testing.T, g *mcpguard.Guard, mux *http.ServeMux) {
			g.Mount(mux, h)
		}, func(c *mcpguard.Config) {
			c.Operations = listIDPolicy
			c.Middleware.Lists = middleware.ListHide
		})
		return s.url, s.token(t, "alice", "acme")
	}},
	{"proxy", func(t *testing.T, h http.Handler) (string, string) {
		up := httptest.NewServer(h)
		t.Cleanup(up.Close)
		res := make([]proxy.ResourceRule, 0, len(listIDPolicy.Resources))
		for _, r := range listIDPolicy.Resources {
			res = append(res, proxy.ResourceRule{URI: r.URI, Prefix: r.Prefix, Scopes: r.Scopes})
		}
		p, _ := newDevProxy(t, []string{baseScope}, false, func(resource, issuer string) proxy.Route {
			return proxy.Route{
				Resource: resource, Upstream: up.URL + "/mcp", Issuers: []string{issuer}, Scopes: []string{baseScope},
				Operations: proxy.Operations{Tools: listIDPolicy.Tools, Prompts: listIDPolicy.Prompts, Resources: res},
				Lists:      "hide",
			}
		})
		as, resource := p.as, p.resource
		tok, err := as.IssueToken("alice", "acme", "list-client", resource, []string{baseScope})
		if err != nil {
			t.Fatal(err)
		}
		return resource, tok
	}},
}

// listEntriesOf returns the entry names of every response in an answer
// body (JSON, or the data of SSE events) to a list of member/key.
func listEntriesOf(body, member, key string) (names []string, responses int) {
	var msgs []string
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		msgs = []string{body}
	} else {
		for line := range strings.SplitSeq(body, "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:"); ok {
				msgs = append(msgs, strings.TrimSpace(d))
			}
		}
	}
	for _, m := range msgs {
		var v struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(m), &v) != nil || v.Result == nil {
			continue
		}
		responses++
		var entries []map[string]any
		_ = json.Unmarshal(v.Result[member], &entries)
		for _, e := range entries {
			n, _ := e[key].(string)
			names = append(names, n)
		}
	}
	return names, responses
}

// TestListIDSpellings sends every list method with each of
// listIDSpellings (and a batch) through the library and through mcpguard
// proxy to plain go-sdk (stateless JSON and SSE, stateful), mcp-go
// (stateless, stateful) and TypeScript SDK servers, in the hide mode, with a
// token that may call the open entries only: no answer shows a secret
// entry, and the plain spellings get the open ones.
func TestListIDSpellings(t *testing.T) {
	t.Parallel()
	for _, front := range listFronts {
		for _, b := range listBackends() {
			t.Run(front.name+"/"+b.name, func(t *testing.T) {
				resource, token := front.start(t, b.handler(t))
				s := &bindServer{url: resource}
				sid := ""
				if b.stateful {
					sid = s.open(t, token)
					if a := s.send(t, http.MethodPost, token, sid, bindInitialized); a.status != http.StatusAccepted {
						t.Fatalf("initialized: %d %s", a.status, a.body)
					}
				}
				leaks, seen := 0, 0
				for _, lm := range listMethods {
					if b.tsOnly && lm[0] != "tools/list" {
						continue
					}
					bodies := map[string]string{}
					for _, id := range listIDSpellings {
						bodies[id] = `{"jsonrpc":"2.0","id":` + id + `,"method":"` + lm[0] + `"}`
					}
					bodies["batch"] = `[{"jsonrpc":"2.0","id":"\u0062","method":"` + lm[0] + `"},{"jsonrpc":"2.0","id":2e0,"method":"` + lm[0] + `"}]`
					for id, body := range bodies {
						a := s.send(t, http.MethodPost, token, sid, body)
						names, _ := listEntriesOf(a.body, lm[1], lm[2])
						open := false
						for _, n := range names {
							if listOpen[n] {
								open = true
							}
							for _, sec := range listSecret {
								if n == sec {
									leaks++
									t.Errorf("%s id %s: %d answer lists %q", lm[0], id, a.status, n)
								}
							}
						}
						if open {
							seen++
						}
						if (id == `1` || id == `"a"`) && !open {
							t.Errorf("%s id %s: %d %.300s: the open entries are not listed", lm[0], id, a.status, a.body)
						}
					}
				}
				t.Logf("%d list answers with the open entries, %d secret entries shown", seen, leaks)
			})
		}
	}
}
