package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// TestHeaderMismatch2026: in MCP 2026-07-28 the Mcp-Method and Mcp-Name
// headers (and MCP-Protocol-Version) must match the body; a mismatch is 400
// with JSON-RPC -32020 (HeaderMismatch), and the operation does not run. A
// load balancer may route on the header while the server executes the
// body, so the scope check must not be fooled either.
func TestHeaderMismatch2026(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	all := e.token(t, "hdr", "tenant-h", baseScope, server.ScopeNotesRead, server.ScopeNotesWrite)
	baseOnly := e.token(t, "hdr", "tenant-h", baseScope)
	write := toolCall(server.ToolNotesWrite, map[string]any{"text": "must not be stored"})

	tests := []struct {
		name   string
		token  string
		method string
		params map[string]any
		header map[string]string
	}{
		{name: "Mcp-Name names another tool", token: all, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Name": server.ToolWhoami}},
		{name: "Mcp-Method names another method", token: all, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Method": "tools/list"}},
		{name: "Mcp-Method differs in case", token: all, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Method": "TOOLS/CALL"}},
		{name: "Mcp-Name missing", token: all, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Name": ""}},
		{name: "Mcp-Method missing", token: all, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Method": ""}},
		{name: "version header differs from _meta", token: all, method: "tools/call", params: write,
			header: map[string]string{"MCP-Protocol-Version": "2025-11-25"}},
		// A header naming a tool the token may call, over a body calling
		// one it may not: the middleware compares before it authorizes,
		// so this is the same 400, not a 200 and not a write.
		{name: "header smuggles a cheaper tool past the scope check", token: baseOnly, method: "tools/call", params: write,
			header: map[string]string{"Mcp-Name": server.ToolWhoami}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tt.token, revision: rev20260728, method: tt.method, params: tt.params, header: tt.header, id: 7})
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400 (body %s)", r.status, r.body)
			}
			if r.rpc.Error == nil || r.rpc.Error.Code != -32020 {
				t.Fatalf("body = %s, want JSON-RPC error -32020", r.body)
			}
			if string(r.rpc.ID) != "7" {
				t.Errorf("JSON-RPC id = %s, want 7", r.rpc.ID)
			}
			if len(r.wwwAuth) != 0 {
				t.Errorf("WWW-Authenticate = %q on a 400 header mismatch, want none", r.wwwAuth)
			}
		})
	}

	// Control: the same request with matching headers works, and the note
	// list shows that none of the refused writes happened.
	r := rawPost(ctx, t, e.mcpURL, rawRequest{token: all, revision: rev20260728, method: "tools/call", params: toolCall(server.ToolNotesList, nil)})
	var list server.NotesListResult
	if tr := r.tool(t); tr.IsError || json.Unmarshal(tr.StructuredContent, &list) != nil || list.Tenant != "tenant-h" || len(list.Notes) != 0 {
		t.Errorf("notes after the refused writes = %s, want none", r.body)
	}

	// 2026-07-28 has no GET stream: 405 (after authentication).
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.mcpURL, nil)
	req.Header.Set("Authorization", "Bearer "+all)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", rev20260728)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp = %d, want 405", resp.StatusCode)
	}
}

// TestScopeListPerRevision: the 403 to a token holding mcp:tools
// notes:read that calls notes_write lists, for 2026-07-28, only what the
// operation needs, and for 2025-11-25 (or a request without a version
// header) that plus the scopes already granted.
func TestScopeListPerRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	for i, rev := range []string{rev20260728, rev20251125, ""} {
		name := rev
		if name == "" {
			name = "no version header"
		}
		t.Run(name, func(t *testing.T) {
			// A subject per case: the step-up bound counts per principal.
			tok := e.token(t, "scopes-"+strconv.Itoa(i), "tenant-r", baseScope, server.ScopeNotesRead)
			r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev, method: "tools/call",
				params: toolCall(server.ToolNotesWrite, map[string]any{"text": "x"})})
			want := wantStepUpScopes[rev]
			if rev == "" {
				want = wantStepUpScopes[rev20251125]
			}
			if r.status != http.StatusForbidden || !slices.Equal(r.wwwAuth, []string{e.insufficientScope(want...)}) {
				t.Errorf("got %d %q,\nwant 403 %q", r.status, r.wwwAuth, e.insufficientScope(want...))
			}
			if string(r.body) != `{"error":"insufficient_scope"}` {
				t.Errorf("body = %s", r.body)
			}
		})
	}
}

// TestStepUpBoundServerSide: a client that keeps presenting a token
// without the scope is invited to step up a bounded number of times
// (middleware default: 3 per principal and scope set); after that the 403
// carries a challenge with resource_metadata only, so no client is sent to
// the authorization server again.
func TestStepUpBoundServerSide(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	tok := e.token(t, "looper", "tenant-l", baseScope)
	want := e.insufficientScope(baseScope, server.ScopeNotesWrite)
	for i := 1; i <= 5; i++ {
		r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "tools/call",
			params: toolCall(server.ToolNotesWrite, map[string]any{"text": "x"})})
		if r.status != http.StatusForbidden {
			t.Fatalf("attempt %d: status %d, want 403", i, r.status)
		}
		switch {
		case i <= 3 && !slices.Equal(r.wwwAuth, []string{want}):
			t.Errorf("attempt %d: WWW-Authenticate = %q, want %q", i, r.wwwAuth, want)
		case i > 3 && !slices.Equal(r.wwwAuth, []string{terminalChallenge(e.metaURL)}):
			t.Errorf("attempt %d: WWW-Authenticate = %q, want the terminal challenge", i, r.wwwAuth)
		}
	}
	// Another operation is unaffected.
	r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: toolCall(server.ToolWhoami, nil)})
	if tr := r.tool(t); tr.IsError {
		t.Errorf("whoami after the bound: %s", r.body)
	}
}

// TestTransportChecks covers the other 2026-07-28 transport rules the
// stack (mcpguard middleware in front of the go-sdk handler) must keep.
func TestTransportChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	tok := e.token(t, "transport", "tenant-x", baseScope)
	whoami := toolCall(server.ToolWhoami, nil)

	// An Origin other than the resource's: 403 without a challenge (DNS
	// rebinding protection), before the token is even looked at.
	for _, token := range []string{tok, ""} {
		r := rawPost(ctx, t, e.mcpURL, rawRequest{token: token, revision: rev20260728, method: "tools/call", params: whoami,
			header: map[string]string{"Origin": "http://evil.example"}})
		if r.status != http.StatusForbidden || len(r.wwwAuth) != 0 {
			t.Errorf("foreign Origin (token %v): %d %q, want 403 without challenge", token != "", r.status, r.wwwAuth)
		}
	}
	// The resource's own origin is fine.
	origin := e.mcpURL[:len(e.mcpURL)-len("/mcp")]
	r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: whoami,
		header: map[string]string{"Origin": origin}})
	if r.status != http.StatusOK {
		t.Errorf("own Origin: %d %s", r.status, r.body)
	}
	// Optional whitespace around a header value is not part of it (RFC
	// 9110 §5.5; the conformance suite checks Mcp-Name).
	r = rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: whoami,
		header: map[string]string{"Mcp-Name": " " + server.ToolWhoami + " "}})
	if r.status != http.StatusOK {
		t.Errorf("Mcp-Name with whitespace: %d %s", r.status, r.body)
	}
	// An unknown method: 404 with JSON-RPC -32601.
	r = rawPost(ctx, t, e.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "nope/nope"})
	if r.status != http.StatusNotFound || r.rpc.Error == nil || r.rpc.Error.Code != -32601 {
		t.Errorf("unknown method: %d %s, want 404 -32601", r.status, r.body)
	}
	// server/discover needs a token like everything else.
	r = rawPost(ctx, t, e.mcpURL, rawRequest{revision: rev20260728, method: "server/discover"})
	if r.status != http.StatusUnauthorized || !slices.Equal(r.wwwAuth, []string{noToken(e.metaURL)}) {
		t.Errorf("server/discover without token: %d %q", r.status, r.wwwAuth)
	}
	// A token in the query is refused even with a good header (RFC 6750
	// §2.3; MCP forbids tokens in the query string).
	r = rawPost(ctx, t, e.mcpURL+"?access_token="+tok, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: whoami})
	if r.status != http.StatusBadRequest {
		t.Errorf("token in query: %d %s, want 400", r.status, r.body)
	}
}
