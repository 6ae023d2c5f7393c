package middleware

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// answersNext is a server whose answer the request's X-Case header picks:
// how it sets Mcp-Session-Id, and whether a 103 Early Hints comes first.
func answersNext(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch c := r.Header.Get("X-Case"); c {
	case "hints-then-create":
		h.Set("Mcp-Session-Id", "s-hinted")
		h.Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
	case "create":
		h.Set("Mcp-Session-Id", r.Header.Get("X-Sid"))
		w.WriteHeader(http.StatusOK)
	case "create-two":
		h["Mcp-Session-Id"] = []string{"s-one", "s-two"}
		w.WriteHeader(http.StatusOK)
	case "other-session":
		h.Set("Mcp-Session-Id", "s-other")
		w.WriteHeader(http.StatusOK)
	case "same-session":
		h.Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		w.WriteHeader(http.StatusOK)
	case "same-and-other":
		h["Mcp-Session-Id"] = []string{r.Header.Get("Mcp-Session-Id"), "s-other"}
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, "case "+c, http.StatusTeapot)
	}
}

// TestSessionAnswers holds the session binding to what the next handler
// answers, on the wire: a 1xx never carries Mcp-Session-Id and does not
// decide the session (the final status does); a created session ID the
// middleware cannot bind drops the answer (503, as a full table); an
// answer in one session that names another reaches the client without it.
func TestSessionAnswers(t *testing.T) {
	e := newSessionEnv(t, nil)
	srv := httptest.NewServer(e.f.m.Handler(http.HandlerFunc(answersNext)))
	t.Cleanup(srv.Close)
	alice, bob := e.tokenOf(t, "alice", "t"), e.tokenOf(t, "bob", "t")

	type result struct {
		status   int
		sid      []string
		body     string
		retry    string
		early    []textproto.MIMEHeader // the 1xx answers' headers
		earlyNum []int
	}
	send := func(t *testing.T, method, token, sid string, hdr map[string]string) result {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(rpcBody(legacyRev, "initialize", ""))
		} else {
			body = strings.NewReader("")
		}
		var res result
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				res.earlyNum = append(res.earlyNum, code)
				res.early = append(res.early, h)
				return nil
			},
		})
		r, err := http.NewRequestWithContext(ctx, method, srv.URL+"/mcp", body)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		res.status, res.sid, res.body, res.retry = resp.StatusCode, resp.Header.Values("Mcp-Session-Id"), string(b), resp.Header.Get("Retry-After")
		return res
	}
	// owned reports the status of a GET in session sid for token.
	owned := func(t *testing.T, token, sid string) int {
		t.Helper()
		return send(t, http.MethodGet, token, sid, map[string]string{"X-Case": "same-session"}).status
	}

	t.Run("1xx without the session header, final status decides", func(t *testing.T) {
		got := send(t, http.MethodPost, alice, "", map[string]string{"X-Case": "hints-then-create"})
		if got.status != http.StatusOK || len(got.sid) != 1 || got.sid[0] != "s-hinted" {
			t.Fatalf("final answer: %d %q", got.status, got.sid)
		}
		if len(got.early) != 1 || got.earlyNum[0] != http.StatusEarlyHints {
			t.Fatalf("1xx answers: %v", got.earlyNum)
		}
		if v := got.early[0].Values("Mcp-Session-Id"); len(v) != 0 {
			t.Fatalf("103 carried Mcp-Session-Id %q before it was bound", v)
		}
		if v := got.early[0].Get("Link"); v != "</style.css>; rel=preload" {
			t.Fatalf("103 Link = %q", v)
		}
		if s := owned(t, alice, "s-hinted"); s != http.StatusOK {
			t.Fatalf("owner in the session created after a 103: %d", s)
		}
		if s := owned(t, bob, "s-hinted"); s != http.StatusNotFound {
			t.Fatalf("another principal in it: %d", s)
		}
	})

	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"two values", map[string]string{"X-Case": "create-two"}},
		{"empty", map[string]string{"X-Case": "create", "X-Sid": ""}},
		{"space", map[string]string{"X-Case": "create", "X-Sid": "s 1"}},
		{"non-ASCII", map[string]string{"X-Case": "create", "X-Sid": "s-\u00e9"}},
		{"257 bytes", map[string]string{"X-Case": "create", "X-Sid": strings.Repeat("s", 257)}},
	} {
		t.Run("created ID refused: "+tc.name, func(t *testing.T) {
			got := send(t, http.MethodPost, alice, "", tc.hdr)
			if got.status != http.StatusServiceUnavailable || len(got.sid) != 0 || got.retry != "30" || got.body != bodyUnavailable {
				t.Fatalf("got %d %q Retry-After %q body %q", got.status, got.sid, got.retry, got.body)
			}
		})
	}
	t.Run("256-byte created ID is bound", func(t *testing.T) {
		id := strings.Repeat("s", 256)
		got := send(t, http.MethodPost, alice, "", map[string]string{"X-Case": "create", "X-Sid": id})
		if got.status != http.StatusOK || len(got.sid) != 1 || got.sid[0] != id {
			t.Fatalf("got %d %q", got.status, got.sid)
		}
		if s := owned(t, alice, id); s != http.StatusOK {
			t.Fatalf("owner: %d", s)
		}
	})

	sid := send(t, http.MethodPost, alice, "", map[string]string{"X-Case": "create", "X-Sid": "s-alice"}).sid
	if len(sid) != 1 {
		t.Fatalf("create: %q", sid)
	}
	for _, tc := range []struct {
		name, c string
		want    []string
	}{
		{"another session's ID is removed", "other-session", nil},
		{"the request's own ID passes", "same-session", []string{"s-alice"}},
		{"its own and another are removed", "same-and-other", nil},
	} {
		t.Run("in session: "+tc.name, func(t *testing.T) {
			got := send(t, http.MethodPost, alice, "s-alice", map[string]string{"X-Case": tc.c})
			if got.status != http.StatusOK || strings.Join(got.sid, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %d %q, want 200 %q", got.status, got.sid, tc.want)
			}
		})
	}
	if s := owned(t, alice, "s-other"); s != http.StatusNotFound {
		t.Fatalf("the ID named in another session's answer was bound: %d", s)
	}
	if s := owned(t, alice, "s-alice"); s != http.StatusOK {
		t.Fatalf("the session itself: %d", s)
	}
}

// TestSessionInUseDoesNotExpire: a session with a request being served (a
// GET stream held open) is not ended at its idle timeout, by a sweep or by
// its own use; its idle timeout starts again when the request ends.
func TestSessionInUseDoesNotExpire(t *testing.T) {
	e := newSessionEnv(t, func(c *Config) { c.Sessions.IdleTimeout = time.Minute })
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	e.h = e.f.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("X-Hold") != "" {
			w.WriteHeader(http.StatusOK)
			entered <- struct{}{}
			<-release // the stream, held open
			return
		}
		e.srv.ServeHTTP(w, r)
	}))
	alice := e.tokenOf(t, "alice", "t")
	streaming, idle := e.create(t, alice), e.create(t, alice)
	done := make(chan int, 1)
	go func() {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+alice)
		r.Header.Set("Mcp-Session-Id", streaming)
		r.Header.Set("X-Hold", "1")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		done <- w.Code
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream never reached the server")
	}
	e.f.iss.Advance(5 * time.Minute)
	alice, bob := e.tokenOf(t, "alice", "t"), e.tokenOf(t, "bob", "t")
	e.create(t, bob) // sweeps expired sessions
	e.srv.waitClosed(t, idle)
	if !e.srv.isLive(streaming) {
		t.Fatal("the session with an open GET stream was closed at its idle timeout")
	}
	if w := e.do(t, http.MethodPost, alice, streaming, rpcBody(legacyRev, "tools/list", "")); w.Code != http.StatusOK {
		t.Fatalf("a request in the streaming session past its idle timeout: %d", w.Code)
	}
	if w := e.do(t, http.MethodGet, bob, streaming, ""); w.Code != http.StatusNotFound {
		t.Fatalf("another principal in the streaming session: %d", w.Code)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the stream: %d", code)
	}
	e.f.iss.Advance(40 * time.Second)
	alice = e.tokenOf(t, "alice", "t")
	if w := e.do(t, http.MethodPost, alice, streaming, rpcBody(legacyRev, "tools/list", "")); w.Code != http.StatusOK {
		t.Fatalf("within the idle timeout after the stream ended: %d", w.Code)
	}
	e.f.iss.Advance(2 * time.Minute)
	alice = e.tokenOf(t, "alice", "t")
	if w := e.do(t, http.MethodPost, alice, streaming, rpcBody(legacyRev, "tools/list", "")); w.Code != http.StatusNotFound {
		t.Fatalf("idle after the stream ended: %d", w.Code)
	}
	e.srv.waitClosed(t, streaming)
}
