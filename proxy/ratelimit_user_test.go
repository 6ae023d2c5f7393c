package proxy_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestRateLimitPerUser: rate_limit.principal counts per user, whatever
// the client: one user through 1,000 client IDs (CIMD and dynamic
// registration let a client choose one at will), at full speed, for 10x
// the limit, gets exactly the limit's requests, and another user's
// requests are never refused meanwhile. Before, the limit was counted per
// (user, client): every one of the 1,000 requests passed.
func TestRateLimitPerUser(t *testing.T) {
	const limit, clients = 100, 1000
	up, _ := echoUpstream(t, "u")
	e := newTestEnv(t, envOptions{
		route: func(r *proxy.Route) {
			r.Upstream = up.URL + "/mcp"
			r.RateLimit = proxy.RateLimit{Principal: fmt.Sprintf("%d/1h", limit)}
		},
		upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() },
	})
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	bob := http.Header{"Authorization": {"Bearer " + e.token(t, "bob", baseScope)}}
	passed := 0
	for i := range clients {
		tok, err := e.as.IssueToken("mallory", "acme", fmt.Sprintf("https://mallory.example/app-%d", i), e.resource, []string{baseScope})
		if err != nil {
			t.Fatal(err)
		}
		resp := do(t, "POST", e.resource, list, http.Header{"Authorization": {"Bearer " + tok}})
		readAll(t, resp)
		switch resp.StatusCode {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("mallory's request %d: %d", i, resp.StatusCode)
		}
		if i%100 == 99 {
			resp := do(t, "POST", e.resource, list, bob)
			readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("bob after %d of mallory's requests: %d, want 200", i+1, resp.StatusCode)
			}
		}
	}
	if passed != limit {
		t.Errorf("mallory passed %d requests through %d clients, want the limit %d", passed, clients, limit)
	}
}
