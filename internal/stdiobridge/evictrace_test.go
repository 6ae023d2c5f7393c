package stdiobridge

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestAttackEvictRequestRace: a request that reaches an idle session
// while a start at a process bound ends it (for its own user at
// max_per_user) is either served, the session then being in use and not
// ended, or refused with 404 (the session gone before the request was
// registered): it never goes to a child that is then ended under it
// ("Server process ended": a request whose effects may have happened,
// lost), which evict.go promises a child in use never suffers.
func TestAttackEvictRequestRace(t *testing.T) {
	h := newHostile(t, Config{MaxPerUser: 1}, nil)
	do := func(sid, body string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(userHeader, "alice")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	sid := open(t, h, "alice")
	for round := range 80 {
		var (
			wg         sync.WaitGroup
			cst, ist   int
			cbody, ibd string
			cerr, ierr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			cst, cbody, cerr = do(sid, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		}()
		go func() {
			defer wg.Done()
			ist, ibd, ierr = do("", initBody)
		}()
		wg.Wait()
		if cerr != nil || ierr != nil {
			t.Fatalf("round %d: %v %v", round, cerr, ierr)
		}
		served := cst == http.StatusOK && strings.Contains(cbody, `"result":{}`)
		if !served && cst != http.StatusNotFound {
			t.Fatalf("round %d: a request on the idle session a start ends: %d %q, want 200 with its answer or 404", round, cst, cbody)
		}
		if ist != http.StatusOK && ist != http.StatusServiceUnavailable {
			t.Fatalf("round %d: initialize: %d %q", round, ist, ibd)
		}
		if ist == http.StatusOK || !served {
			sid = open(t, h, "alice") // ends the others, idle
		}
	}
}
