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
		tok, err := e.as.IssueToken(user, "acme", client, e.resource, []string{baseScope})
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
	for deadline := time.Now().Add(30 * time.Second); proxy.UserStreams(e.px) != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("open streams %d after alice closed one, want %d", proxy.UserStreams(e.px), want)
		}
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

// TestStreamsPerUserReleased: a POST answer that is a stream takes a slot
// like a GET stream, and the slot is given back however the stream ends:
// the client leaves, the upstream ends it, timeouts.idle_stream ends it.
// Each case waits on the proxy's count (bounded), never on a duration.
func TestStreamsPerUserReleased(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":4,"method":"ping"}`
	tests := []struct {
		name   string
		method string
		query  string // "?end=1": the upstream ends the stream after its first event
		idle   time.Duration
		client bool // the client leaves
	}{
		{name: "GET, client gone", method: http.MethodGet, client: true},
		{name: "POST answer, client gone", method: http.MethodPost, client: true},
		{name: "GET, upstream end", method: http.MethodGet, query: "?end=1"},
		{name: "POST answer, upstream end", method: http.MethodPost, query: "?end=1"},
		{name: "GET, idle_stream", method: http.MethodGet, idle: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hold := make(chan struct{})
			t.Cleanup(func() { close(hold) })
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, ": open\n\n")
				http.NewResponseController(w).Flush()
				if r.URL.Query().Get("end") != "" {
					<-hold // until the test saw the slot taken
					return
				}
				select {
				case <-r.Context().Done():
				case <-hold:
				}
			}))
			t.Cleanup(up.Close)
			e := newTestEnv(t, envOptions{
				route: func(r *proxy.Route) { r.Upstream = up.URL + "/mcp"; r.MaxStreamsPerUser = 1 },
				cfg: func(c *proxy.Config) {
					if tt.idle > 0 {
						c.Timeouts.IdleStream = tt.idle
					}
				},
				upstream: func(*testing.T, string, string, string) http.Handler { return http.NotFoundHandler() },
			})
			tok := e.token(t, "alice", baseScope)
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tt.method, e.resource+tt.query, strings.NewReader(map[string]string{http.MethodPost: ping}[tt.method]))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.method == http.MethodPost {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line := make([]byte, len(": open\n"))
			if _, err := io.ReadFull(resp.Body, line); resp.StatusCode != http.StatusOK || err != nil {
				t.Fatalf("the stream: %d %q %v", resp.StatusCode, line, err)
			}
			if n := proxy.UserStreams(e.px); n != 1 {
				t.Fatalf("open streams %d, want 1", n)
			}
			second := do(t, http.MethodGet, e.resource, "", http.Header{"Authorization": {"Bearer " + tok}, "Accept": {"text/event-stream"}})
			readAll(t, second)
			if second.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("a second stream: %d, want 429", second.StatusCode)
			}
			switch {
			case tt.client:
				cancel()
			case tt.query != "":
				hold <- struct{}{}
			}
			for deadline := time.Now().Add(30 * time.Second); proxy.UserStreams(e.px) != 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("open streams %d after the end, want 0", proxy.UserStreams(e.px))
				}
			}
		})
	}
}
