package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestStreamsPerUser: max_streams_per_user bounds one user's open GET
// streams whatever the client: alice opens the cap, the next gets 429
// with Retry-After and the proxy's JSON-RPC body, and so does each of her
// requests through other client IDs; bob is served meanwhile; closing
// one of alice's streams frees a slot. Before, every stream was served.
func TestStreamsPerUser(t *testing.T) {
	const maxStreams, otherClients = 3, 20
	up := heldStreamUpstream(t)
	e := newTestEnv(t, envOptions{
		route: func(r *proxy.Route) {
			r.Upstream = up
			r.MaxStreamsPerUser = maxStreams
		},
		upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() },
	})
	ctx := testContext(t)
	tokenOf := func(user, client string) string {
		tok, err := devmint.Of(e.as).IssueToken(user, "acme", client, e.resource, []string{baseScope})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	type stream struct {
		resp   *http.Response
		cancel context.CancelFunc
	}
	open := func(user, client string) stream {
		t.Helper()
		sctx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(sctx, http.MethodGet, e.resource, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokenOf(user, client))
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("GET for %s (%s): %v", user, client, err)
		}
		s := stream{resp, cancel}
		t.Cleanup(func() { s.cancel(); s.resp.Body.Close() })
		if resp.StatusCode == http.StatusOK {
			// The stream is open once its first event arrived.
			line := make([]byte, len(": open\n"))
			if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != ": open\n" {
				t.Fatalf("%s's stream: %q, %v", user, line, err)
			}
		}
		return s
	}
	wantRefused := func(t *testing.T, s stream, who string) {
		t.Helper()
		if s.resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429", who, s.resp.StatusCode)
		}
		body := readAll(t, s.resp)
		if s.resp.StatusCode != http.StatusTooManyRequests || s.resp.Header.Get("Retry-After") != "5" ||
			body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Too Many Requests"}}`+"\n" {
			t.Fatalf("%s: %d Retry-After %q %q, want 429, 5 and the JSON-RPC error", who, s.resp.StatusCode, s.resp.Header.Get("Retry-After"), body)
		}
	}

	var alice []stream
	for i := range maxStreams {
		s := open("alice", testClient)
		if s.resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's stream %d: %d, want 200", i, s.resp.StatusCode)
		}
		alice = append(alice, s)
	}
	tests := []struct {
		name, user, client string
		want               int
	}{
		{"alice over the cap", "alice", testClient, http.StatusTooManyRequests},
		{"bob", "bob", testClient, http.StatusOK},
	}
	for i := range otherClients {
		tests = append(tests, struct {
			name, user, client string
			want               int
		}{fmt.Sprintf("alice through client %d", i), "alice", fmt.Sprintf("https://alice.example/app-%d", i), http.StatusTooManyRequests})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(tt.user, tt.client)
			if tt.want == http.StatusTooManyRequests {
				wantRefused(t, s, tt.name)
				return
			}
			if s.resp.StatusCode != tt.want {
				t.Fatalf("%d, want %d", s.resp.StatusCode, tt.want)
			}
		})
	}

	// Closing one of alice's streams frees a slot: wait until the proxy
	// counted it closed (bounded), then she is served again.
	alice[0].cancel()
	alice[0].resp.Body.Close()
	const want = maxStreams // alice's two left and bob's one
	for i := 0; proxy.UserStreams(e.px) != want; i++ {
		if i == 1000 {
			t.Fatalf("open streams %d after alice closed one, want %d", proxy.UserStreams(e.px), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := open("alice", testClient); s.resp.StatusCode != http.StatusOK {
		t.Fatalf("alice after closing one: %d, want 200", s.resp.StatusCode)
	}
	if s := open("alice", testClient); s.resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("alice at the cap again: %d, want 429", s.resp.StatusCode)
	}
}

// heldStreamUpstream answers every GET with an SSE stream that stays open until
// the request ends.
func heldStreamUpstream(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, ": open\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestStreamsPerUserNegative: a negative max_streams_per_user is refused.
func TestStreamsPerUserNegative(t *testing.T) {
	_, err := proxy.New(proxy.Config{Routes: []proxy.Route{{Resource: "https://mcp.example.com/mcp", Upstream: "http://127.0.0.1:1/mcp",
		Issuers: []string{"https://auth.example.com"}, MaxStreamsPerUser: -1}}})
	if !errors.Is(err, proxy.ErrConfig) || !strings.Contains(err.Error(), "routes[0].max_streams_per_user: negative") {
		t.Fatalf("New = %v, want ErrConfig naming routes[0].max_streams_per_user", err)
	}
}
