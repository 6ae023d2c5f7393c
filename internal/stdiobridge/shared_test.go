package stdiobridge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPerUser: with PerUser, the sessions of one user share one process
// (one counter), another user's sessions never reach it, each session
// keeps its own id, a DELETE of one session leaves the other working,
// and the last DELETE stops the process.
func TestPerUser(t *testing.T) {
	h := newHarness(t, Config{PerUser: true})
	ctx := ctxT(t)
	a1 := h.connect(t, "alice", nil)
	a2 := h.connect(t, "alice", nil)
	b1 := h.connect(t, "bob", nil)
	b2 := h.connect(t, "bob", nil)
	if a1.ID() == a2.ID() || a1.ID() == "" {
		t.Fatalf("session ids %q %q, want two", a1.ID(), a2.ID())
	}
	for i, step := range []struct {
		cs   *mcp.ClientSession
		who  string
		want string
	}{
		{a1, "alice 1", "1"}, {a2, "alice 2", "2"}, {a1, "alice 1", "3"},
		{b1, "bob 1", "1"}, {b2, "bob 2", "2"}, {a2, "alice 2", "4"},
	} {
		if got, err := callText(ctx, step.cs, "incr"); err != nil || got != `{"text":"`+step.want+`"}` {
			t.Fatalf("step %d: %s incr = %q, %v; want %s", i, step.who, got, err, step.want)
		}
	}
	if n := h.b.Children(); n != 2 {
		t.Fatalf("children = %d, want 2 (one per user)", n)
	}
	// bob cannot name alice's sessions.
	for _, sid := range []string{a1.ID(), a2.ID()} {
		resp := rawPost(t, h.srv.URL, "bob", sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob in alice's session: %d, want 404", resp.StatusCode)
		}
	}
	// Concurrent calls of alice's two sessions, with the same request ids
	// on both (go-sdk numbers from 1 per session), all answered to the
	// session that asked: 40 calls, each answer a distinct count.
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, cs := range []*mcp.ClientSession{a1, a2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := callText(ctx, cs, "incr")
				mu.Lock()
				if err != nil || seen[got] {
					t.Errorf("concurrent incr = %q, %v (seen %v)", got, err, seen[got])
				}
				seen[got] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if !seen[`{"text":"44"}`] {
		t.Errorf("counts after 40 concurrent calls: %v, want up to 44", seen)
	}
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := callText(ctx, a2, "incr"); err != nil || got != `{"text":"45"}` {
		t.Fatalf("alice's other session after a DELETE: %q, %v", got, err)
	}
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return h.b.Children() == 1 })
	// A new session of alice starts afresh.
	if got, err := callText(ctx, h.connect(t, "alice", nil), "incr"); err != nil || got != `{"text":"1"}` {
		t.Fatalf("alice's new session: %q, %v; want 1", got, err)
	}
}

// TestPerUserConcurrentUsers: 10 users with 2 sessions each call their
// counters concurrently; each user's counts are exactly 1..n across both
// sessions, so no call crossed users.
func TestPerUserConcurrentUsers(t *testing.T) {
	h := newHarness(t, Config{PerUser: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const users, calls = 10, 10
	var wg sync.WaitGroup
	for u := range users {
		name := fmt.Sprintf("user%d", u)
		s1, s2 := h.connect(t, name, nil), h.connect(t, name, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mu sync.Mutex
			got := map[string]bool{}
			var w2 sync.WaitGroup
			for _, cs := range []*mcp.ClientSession{s1, s2} {
				w2.Add(1)
				go func() {
					defer w2.Done()
					for range calls {
						txt, err := callText(ctx, cs, "incr")
						if err != nil {
							t.Errorf("%s: %v", name, err)
							return
						}
						mu.Lock()
						got[txt] = true
						mu.Unlock()
					}
				}()
			}
			w2.Wait()
			for i := 1; i <= 2*calls; i++ {
				if !got[`{"text":"`+fmt.Sprint(i)+`"}`] {
					t.Errorf("%s: counts %v, missing %d", name, keys(got), i)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := h.b.Children(); n != users {
		t.Errorf("children = %d, want %d", n, users)
	}
}

func keys(m map[string]bool) string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	return strings.Join(s, " ")
}
