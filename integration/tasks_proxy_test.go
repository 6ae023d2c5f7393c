package integration

import (
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpgoserver "github.com/mark3labs/mcp-go/server"
)

// gzipJSON compresses h's JSON answers for clients that accept gzip, as
// a compressing front end of an upstream would.
func gzipJSON(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		w.Header().Del("Content-Length")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(rec.Code)
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(rec.Body.Bytes())
		_ = zw.Close()
	})
}

// TestTasksThroughProxy: mcpguard proxy in front of an mcp-go server in
// stateless mode (which keys every task by the empty session ID and
// compresses its JSON answers here): bob never lists, reads, polls or
// cancels alice's task, whatever revision he speaks; alice does.
func TestTasksThroughProxy(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(gzipJSON(mcpgoserver.NewStreamableHTTPServer(newMCPGoTaskServer(), mcpgoserver.WithStateLess(true))))
	t.Cleanup(up.Close)
	p := newProxied(t, func(string, string) string { return up.URL + "/mcp" })
	tok := func(sub, tenant string) string {
		t.Helper()
		s, err := p.as.IssueToken(sub, tenant, "proxied-client", p.resource, []string{baseScope})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e := &taskEnv{url: p.resource}
	alice := &taskCaller{e: e, rev: taskLegacy, token: tok("alice", "tenant-a"), enc: "gzip"}
	aliceM := &taskCaller{e: e, rev: taskModern, token: alice.token, enc: "gzip"}
	bobL := &taskCaller{e: e, rev: taskLegacy, token: tok("bob", "tenant-b"), enc: "gzip"}
	bobM := &taskCaller{e: e, rev: taskModern, token: bobL.token, enc: "gzip"}
	ids := []string{alice.createTask(t), aliceM.createTask(t)}
	for _, id := range ids {
		if id == "" {
			t.Fatal("mcp-go did not create a task")
		}
		alice.waitDone(t, id)
	}
	for _, bob := range []*taskCaller{bobL, bobM} {
		for _, id := range ids {
			if a := bob.post(t, "tasks/list", ""); strings.Contains(a.body, id) {
				t.Errorf("bob's %s tasks/list through the proxy shows alice's task: %d %s", bob.rev, a.status, a.body)
			}
			for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				a := bob.post(t, method, `"taskId":"`+id+`"`)
				errObj, _ := a.response()["error"].(map[string]any)
				if strings.Contains(a.body, "secret of") || errObj == nil || errObj["code"] != float64(taskRefusal(bob.rev, method)) {
					t.Errorf("bob's %s %s through the proxy: %d %s, want a %d error", bob.rev, method, a.status, a.body, taskRefusal(bob.rev, method))
				}
			}
		}
	}
	a := alice.post(t, "tasks/list", "")
	for _, id := range ids {
		if !strings.Contains(a.body, id) {
			t.Errorf("alice's tasks/list lacks %s: %d %s", id, a.status, a.body)
		}
	}
}
