package proxy_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
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
