package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// The go-sdk's default, stateful Streamable HTTP handler, driven by the
// real go-sdk client: a session belongs to the principal that created it,
// and every handler sees the principal of its own request.

// TestStatefulSessionBinding: alice (tenant-a) connects with the go-sdk
// client and gets a session; bob (tenant-b), with his own valid token,
// presents alice's Mcp-Session-Id on POST (tools/call), GET (her stream)
// and DELETE. Each is refused before the session is touched: no byte of
// alice's data, and her session still works afterwards. (mcpguard answers
// 404; the go-sdk's own check would answer 403.)
func TestStatefulSessionBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{stateful: true})
	ctx := testContext(t)
	cs, _ := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev20251125, loginHint: "alice@tenant-a",
		extraScopes: []string{server.ScopeNotesRead, server.ScopeNotesWrite}})
	sid := cs.ID()
	if sid == "" {
		t.Fatal("stateful server issued no Mcp-Session-Id")
	}
	var who server.WhoamiResult
	callJSON(ctx, t, cs, server.ToolWhoami, nil, &who)
	if who.Subject != "alice" || who.Tenant != "tenant-a" {
		t.Fatalf("alice's whoami = %+v", who)
	}
	callJSON(ctx, t, cs, server.ToolNotesWrite, map[string]any{"text": "alice's secret"}, new(server.NotesWriteResult))

	bob := e.token(t, "bob", "tenant-b", baseScope, server.ScopeNotesRead, server.ScopeNotesWrite)
	secrets := []string{"alice", "tenant-a", "secret"}

	t.Run("POST", func(t *testing.T) {
		for _, tool := range []string{server.ToolWhoami, server.ToolNotesList} {
			r := rawPost(ctx, t, e.mcpURL, rawRequest{token: bob, revision: rev20251125, method: "tools/call",
				params: toolCall(tool, nil), header: map[string]string{"Mcp-Session-Id": sid}})
			if r.status != http.StatusForbidden && r.status != http.StatusNotFound {
				t.Errorf("bob's %s on alice's session: status %d, want 403 or 404; body %s", tool, r.status, r.body)
			}
			for _, s := range secrets {
				if strings.Contains(string(r.body), s) {
					t.Errorf("bob's %s on alice's session: body %q contains %q", tool, r.body, s)
				}
			}
		}
		// A notes_write as bob must not land in alice's session either.
		r := rawPost(ctx, t, e.mcpURL, rawRequest{token: bob, revision: rev20251125, method: "tools/call",
			params: toolCall(server.ToolNotesWrite, map[string]any{"text": "written by bob"}), header: map[string]string{"Mcp-Session-Id": sid}})
		if r.status != http.StatusForbidden && r.status != http.StatusNotFound {
			t.Errorf("bob's notes_write on alice's session: status %d, want 403 or 404; body %s", r.status, r.body)
		}
	})

	t.Run("GET", func(t *testing.T) {
		status, ctype, body := sessionRequest(ctx, t, http.MethodGet, e.mcpURL, bob, sid)
		if status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("bob's GET of alice's stream: status %d (%s), want 403 or 404", status, ctype)
		}
		if strings.HasPrefix(ctype, "text/event-stream") {
			t.Errorf("bob's GET of alice's stream opened an event stream")
		}
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("bob's GET: body %q contains %q", body, s)
			}
		}
	})

	t.Run("DELETE", func(t *testing.T) {
		status, _, _ := sessionRequest(ctx, t, http.MethodDelete, e.mcpURL, bob, sid)
		if status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("bob's DELETE of alice's session: status %d, want 403 or 404", status)
		}
	})

	// Alice's session is intact, and holds only her note.
	var list server.NotesListResult
	callJSON(ctx, t, cs, server.ToolNotesList, nil, &list)
	if list.Tenant != "tenant-a" || len(list.Notes) != 1 || list.Notes[0].Text != "alice's secret" {
		t.Errorf("alice's notes after bob's attempts = %+v", list)
	}
	// Bob, in a session of his own, sees his tenant only.
	bs := initSession(ctx, t, e.mcpURL, bob)
	var bw server.WhoamiResult
	decodeTool(t, rawPost(ctx, t, e.mcpURL, rawRequest{token: bob, revision: rev20251125, method: "tools/call",
		params: toolCall(server.ToolWhoami, nil), header: map[string]string{"Mcp-Session-Id": bs}}), &bw)
	if bw.Subject != "bob" || bw.Tenant != "tenant-b" {
		t.Errorf("bob's whoami in his own session = %+v", bw)
	}
}

// TestStatefulNewTokenScopes: mid-session, the same user presents a new
// token with more scopes; the handler of that request sees the new
// scopes, not those of the token that created the session.
func TestStatefulNewTokenScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{stateful: true})
	ctx := testContext(t)
	first := e.token(t, "carol", "tenant-c", baseScope)
	sid := initSession(ctx, t, e.mcpURL, first)

	var who server.WhoamiResult
	decodeTool(t, rawPost(ctx, t, e.mcpURL, rawRequest{token: first, revision: rev20251125, method: "tools/call",
		params: toolCall(server.ToolWhoami, nil), header: map[string]string{"Mcp-Session-Id": sid}}), &who)
	if !slices.Equal(who.Scopes, []string{baseScope}) {
		t.Fatalf("whoami with the first token: scopes %q", who.Scopes)
	}
	wider := e.token(t, "carol", "tenant-c", baseScope, server.ScopeNotesRead)
	decodeTool(t, rawPost(ctx, t, e.mcpURL, rawRequest{token: wider, revision: rev20251125, method: "tools/call",
		params: toolCall(server.ToolWhoami, nil), header: map[string]string{"Mcp-Session-Id": sid}}), &who)
	if want := []string{baseScope, server.ScopeNotesRead}; !slices.Equal(who.Scopes, want) {
		t.Errorf("whoami with the wider token in the same session: scopes %q, want %q", who.Scopes, want)
	}
	var list server.NotesListResult
	decodeTool(t, rawPost(ctx, t, e.mcpURL, rawRequest{token: wider, revision: rev20251125, method: "tools/call",
		params: toolCall(server.ToolNotesList, nil), header: map[string]string{"Mcp-Session-Id": sid}}), &list)
	if list.Tenant != "tenant-c" {
		t.Errorf("notes_list with the wider token: tenant %q", list.Tenant)
	}
}

// initSession runs the 2025-11-25 initialize handshake with raw HTTP and
// returns the session ID.
func initSession(ctx context.Context, t *testing.T, mcpURL, token string) string {
	t.Helper()
	post := func(body, sid string) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", rev20251125)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		return resp, b
	}
	resp, b := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, "")
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q: %s", resp.StatusCode, sid, b)
	}
	if resp, b = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", resp.StatusCode, b)
	}
	return sid
}

// sessionRequest sends a GET (SSE stream) or DELETE for session sid and
// returns the status, Content-Type and at most 4 KiB of the body (a stream
// is cut off at once: the request's context is canceled after the
// headers).
func sessionRequest(ctx context.Context, t *testing.T, method, mcpURL, token, sid string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, mcpURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", rev20251125)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	ctype := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ctype, "text/event-stream") {
		return resp.StatusCode, ctype, ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, ctype, string(b)
}

// decodeTool decodes the structured content of a successful tools/call.
func decodeTool(t *testing.T, r *rawResponse, out any) {
	t.Helper()
	res := r.tool(t)
	if res.IsError {
		t.Fatalf("tool error: %s", r.body)
	}
	if err := json.Unmarshal(res.StructuredContent, out); err != nil {
		t.Fatalf("structured content %s: %v", res.StructuredContent, err)
	}
}
