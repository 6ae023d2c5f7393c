package integration

import (
	"bytes"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// TestTenantIsolation: users of tenant A and tenant B, each authorized
// through the full flow with the SDK client. B never sees A's notes: not by
// default, and not by naming tenant A in the arguments, which is a tool
// error without data. A's own tenant argument is accepted.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			ctx := testContext(t)
			tenantA, tenantB := "acme-"+rev[:4], "globex-"+rev[:4]
			scopes := []string{server.ScopeNotesRead, server.ScopeNotesWrite}
			alice, _ := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev, loginHint: "alice@" + tenantA, extraScopes: scopes})
			bob, _ := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: rev, loginHint: "bob@" + tenantB, extraScopes: scopes})

			var w server.NotesWriteResult
			callJSON(ctx, t, alice, server.ToolNotesWrite, map[string]any{"text": "A's secret"}, &w)
			if w.Tenant != tenantA {
				t.Fatalf("alice wrote to %q, want %q", w.Tenant, tenantA)
			}
			callJSON(ctx, t, bob, server.ToolNotesWrite, map[string]any{"text": "B's note"}, &w)

			// Default: each sees only their tenant.
			var la, lb server.NotesListResult
			callJSON(ctx, t, alice, server.ToolNotesList, map[string]any{}, &la)
			callJSON(ctx, t, bob, server.ToolNotesList, map[string]any{}, &lb)
			if la.Tenant != tenantA || len(la.Notes) != 1 || la.Notes[0].Text != "A's secret" {
				t.Errorf("alice's list = %+v", la)
			}
			if lb.Tenant != tenantB || len(lb.Notes) != 1 || lb.Notes[0].Text != "B's note" {
				t.Errorf("bob's list = %+v", lb)
			}

			// Naming one's own tenant is fine.
			callJSON(ctx, t, alice, server.ToolNotesList, map[string]any{"tenant": tenantA}, &la)
			if len(la.Notes) != 1 {
				t.Errorf("alice's list with her tenant = %+v", la)
			}

			// Bob names tenant A: a tool error, and no data at all.
			res, err := bob.CallTool(ctx, callParams(server.ToolNotesList, map[string]any{"tenant": tenantA}))
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if !res.IsError || res.StructuredContent != nil {
				t.Errorf("bob naming tenant A: isError=%v structured=%v, want isError and no structured content", res.IsError, res.StructuredContent)
			}
			if got := toolText(res); got != "tenant does not match the caller's tenant" {
				t.Errorf("tool error text = %q", got)
			}
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); !ok || tc.Text != "tenant does not match the caller's tenant" {
					t.Errorf("unexpected content %#v", c)
				}
			}
		})
	}

	// The same over raw HTTP, where nothing in a client library could
	// hide data: the answer must not contain A's note.
	t.Run("raw", func(t *testing.T) {
		ctx := testContext(t)
		tokA := e.token(t, "alice", "initech", baseScope, server.ScopeNotesRead, server.ScopeNotesWrite)
		tokB := e.token(t, "bob", "umbrella", baseScope, server.ScopeNotesRead)
		r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tokA, revision: rev20260728, method: "tools/call",
			params: toolCall(server.ToolNotesWrite, map[string]any{"text": "initech-only"})})
		if tr := r.tool(t); tr.IsError {
			t.Fatalf("write: %s", r.body)
		}
		for _, args := range []map[string]any{{}, {"tenant": "initech"}} {
			r := rawPost(ctx, t, e.mcpURL, rawRequest{token: tokB, revision: rev20260728, method: "tools/call",
				params: toolCall(server.ToolNotesList, args)})
			tr := r.tool(t)
			if bytes.Contains(r.body, []byte("initech-only")) {
				t.Errorf("bob's answer with args %v contains tenant A's note: %s", args, r.body)
			}
			if _, named := args["tenant"]; named != tr.IsError {
				t.Errorf("args %v: isError = %v, want %v (%s)", args, tr.IsError, named, r.body)
			}
			if named := args["tenant"] != nil; named && tr.StructuredContent != nil {
				t.Errorf("args %v: structured content %s in an error", args, tr.StructuredContent)
			}
		}
	})
}
