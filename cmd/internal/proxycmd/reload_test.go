package proxycmd

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reloadFile writes a configuration with dev_as and one route whose tool
// ping needs pingScope.
func reloadFile(t *testing.T, file, addr, devAddr, upstream, pingScope string) {
	t.Helper()
	doc := fmt.Sprintf(`dev_as: %s
routes:
  - resource: http://%s/mcp
    upstream: %s
    issuers: [http://%s]
    scopes: [mcp:tools]
    operations:
      tools: {ping: [%s]}
`, devAddr, addr, upstream, devAddr, pingScope)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadUnderLoad: 4 go-sdk clients in sessions call a tool without
// pause while the configuration is reloaded 50 times, alternating two
// policies: no call fails (the sessions survive every reload), each
// reload takes effect (a new generation serves), and a policy change
// applies to the next request. A bad file is refused with the reason
// logged, and the running configuration keeps serving.
func TestReloadUnderLoad(t *testing.T) {
	upstream, _ := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	file := filepath.Join(t.TempDir(), "mcpguard.yaml")
	reloadFile(t, file, addr, devAddr, upstream, "tools:ping")
	o, err := parseFlags([]string{"-addr", addr, "-config", file}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	st, stderr := startRun(t, o, nil)
	tok, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools", "tools:ping", "tools:ping2"})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound, not a threshold: the calls stop at close(stop)
	defer cancel()
	var calls, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("c%d", i), Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: st.Resource, HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
		if err != nil {
			t.Fatalf("Connect: %v\n%s", err, stderr.String())
		}
		defer cs.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping"})
				calls.Add(1)
				if err != nil || res.IsError {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%v %+v", err, res))
				}
			}
		}()
	}
	gens := map[any]bool{st.Current(): true}
	for i := range 50 {
		scope := "tools:ping"
		if i%2 == 0 {
			scope = "tools:ping2"
		}
		reloadFile(t, file, addr, devAddr, upstream, scope)
		before := calls.Load()
		if err := st.Reload(); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		gens[st.Current()] = true
		for n := 0; calls.Load() < before+4 && n < 1000; n++ { // let some calls reach the new generation
			time.Sleep(time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Errorf("%d of %d calls failed across 50 reloads; first: %v", n, calls.Load(), firstErr.Load())
	}
	if len(gens) != 51 {
		t.Errorf("%d generations served, want 51", len(gens))
	}
	t.Logf("%d calls across 50 reloads", calls.Load())

	// A policy change applies: ping now needs a scope the token lacks.
	reloadFile(t, file, addr, devAddr, upstream, "tools:admin")
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if code, wa := callTool(t, st.Resource, tok, "ping"); code != http.StatusForbidden || !strings.Contains(wa, "tools:admin") {
		t.Errorf("after the policy change: %d %q, want 403 naming tools:admin", code, wa)
	}

	// A bad file is refused, logged with its reason; the running
	// configuration stays.
	cur := st.Current()
	os.WriteFile(file, []byte("routes:\n  - resource: http://"+addr+"/mcp\n    upstrem: x\n"), 0o600)
	err = st.Reload()
	if err == nil || !strings.Contains(err.Error(), `unknown key "upstrem"`) {
		t.Errorf("bad file: reload error %v, want the unknown key named", err)
	}
	if st.Current() != cur {
		t.Error("bad file: the generation changed")
	}
	if log := stderr.String(); !strings.Contains(log, `"msg":"configuration reload refused; the running configuration stays"`) || !strings.Contains(log, `upstrem: unknown key`) {
		t.Errorf("the refusal is not logged with its reason:\n%s", log)
	}
	if code, _ := callTool(t, st.Resource, tok, "ping"); code != http.StatusForbidden {
		t.Errorf("after the refused reload: %d, want the running policy's 403", code)
	}
}
