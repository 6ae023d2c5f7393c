package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// listsFixture is a stateless mcp-go server with tools, prompts, resources
// and templates behind the adapter, in one list mode.
func listsFixture(t *testing.T, mode middleware.ListMode) *fixture {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{resource},
		Now:       iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator: v,
		Metadata:  prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:    []string{"mcp"},
		Operations: middleware.OperationPolicy{
			Tools:   map[string][]string{"secret": {"secret:read"}},
			Prompts: map[string][]string{"admin_prompt": {"admin"}},
			Resources: []middleware.ResourceRule{
				{URI: "file:///admin", Scopes: []string{"admin"}},
				{URI: "file:///vault/", Prefix: true, Scopes: []string{"admin"}},
			},
			Public: middleware.PublicOperations{Methods: []string{"initialize", "tools/list", "prompts/list", "resources/list", "resources/templates/list"}, Tools: []string{"hello"}},
		},
		Lists: mode,
		Now:   iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := server.NewMCPServer("mcpgo-lists", "0", server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	tool := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	for _, name := range []string{"whoami", "secret", "hello"} {
		ms.AddTool(mcp.NewTool(name), tool)
	}
	prompt := func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	ms.AddPrompt(mcp.NewPrompt("admin_prompt"), prompt)
	ms.AddPrompt(mcp.NewPrompt("greeting"), prompt)
	read := func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil }
	ms.AddResource(mcp.NewResource("file:///admin", "admin"), read)
	ms.AddResource(mcp.NewResource("file:///readme", "readme"), read)
	ms.AddResourceTemplate(mcp.NewResourceTemplate("file:///vault/{name}", "vault"), read)
	ms.AddResourceTemplate(mcp.NewResourceTemplate("file:///{name}", "files"), read)
	a, err := mcpgo.New(mcpgo.Config{Middleware: m, Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m.Handler(a.Bind(server.NewStreamableHTTPServer(ms, a.Options()...))))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &fixture{iss: iss, url: resource}
}

// TestLists: with a real mcp-go server, the four lists answer in each mode
// what the middleware's answer layer shows, annotated in _meta.securitySchemes,
// and a second request gets the same (mcp-go's registered values are not
// modified).
func TestLists(t *testing.T) {
	t.Parallel()
	list := func(t *testing.T, f *fixture, method, token, field, key string) []string {
		t.Helper()
		r := f.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"`+method+`"}`, token, "")
		body := r.body
		if i := strings.Index(body, "data: "); i >= 0 {
			body = strings.TrimSpace(body[i+len("data: "):])
		}
		var res struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if r.status != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
			t.Fatalf("%s: %d %s", method, r.status, r.body)
		}
		var items []map[string]any
		if err := json.Unmarshal(res.Result[field], &items); err != nil {
			t.Fatalf("%s: %s", method, res.Result[field])
		}
		var names []string
		for _, it := range items {
			n, _ := it[key].(string)
			if meta, ok := it["_meta"].(map[string]any); ok {
				b, _ := json.Marshal(meta["securitySchemes"])
				var schemes []struct {
					Type   string   `json:"type"`
					Scopes []string `json:"scopes"`
				}
				_ = json.Unmarshal(b, &schemes)
				for _, s := range schemes {
					n += "=" + s.Type + fmt.Sprint(s.Scopes)
				}
			}
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	}
	type want struct{ tools, prompts, resrcs, tmpls []string }
	annotated := want{
		[]string{"hello=noauth[]", "secret=oauth2[mcp secret:read]", "whoami=oauth2[mcp]"},
		[]string{"admin_prompt=oauth2[mcp admin]", "greeting=oauth2[mcp]"},
		[]string{"file:///admin=oauth2[mcp admin]", "file:///readme=oauth2[mcp]"},
		[]string{"file:///vault/{name}=oauth2[mcp admin]", "file:///{name}=oauth2[mcp]"},
	}
	for _, tc := range []struct {
		mode   middleware.ListMode
		name   string
		scopes []string // nil: no token
		want   want
	}{
		{middleware.ListAnnotate, "anonymous", nil, annotated},
		{middleware.ListAnnotate, "base", []string{"mcp"}, annotated},
		{middleware.ListHide, "anonymous", nil, want{[]string{"hello=noauth[]"}, nil, nil, nil}},
		{middleware.ListHide, "base", []string{"mcp"}, want{
			[]string{"hello=noauth[]", "whoami=oauth2[mcp]"}, []string{"greeting=oauth2[mcp]"},
			[]string{"file:///readme=oauth2[mcp]"}, []string{"file:///{name}=oauth2[mcp]"},
		}},
		{middleware.ListHide, "admin", []string{"mcp", "admin"}, want{
			[]string{"hello=noauth[]", "whoami=oauth2[mcp]"}, annotated.prompts, annotated.resrcs, annotated.tmpls,
		}},
		{middleware.ListOff, "base", []string{"mcp"}, want{
			[]string{"hello", "secret", "whoami"}, []string{"admin_prompt", "greeting"},
			[]string{"file:///admin", "file:///readme"}, []string{"file:///vault/{name}", "file:///{name}"},
		}},
	} {
		t.Run(tc.mode.String()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			f := listsFixture(t, tc.mode)
			token := ""
			if tc.scopes != nil {
				token = f.token(t, "u", "t", tc.scopes...)
			}
			for range 2 {
				for _, l := range []struct {
					method, field, key string
					want               []string
				}{
					{"tools/list", "tools", "name", tc.want.tools},
					{"prompts/list", "prompts", "name", tc.want.prompts},
					{"resources/list", "resources", "uri", tc.want.resrcs},
					{"resources/templates/list", "resourceTemplates", "uriTemplate", tc.want.tmpls},
				} {
					if got := list(t, f, l.method, token, l.field, l.key); !slices.Equal(got, l.want) {
						t.Errorf("%s = %q, want %q", l.method, got, l.want)
					}
				}
			}
		})
	}
}
