package integration

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// wantStepUpScopes is the scope list of the 403 to a token holding
// mcp:tools notes:read that calls notes_write. MCP 2026-07-28 servers list
// every scope the operation needs (base and tool); for 2025-11-25 the
// server adds the scopes already granted (its "recommended approach"), so
// clients that replace their scope set keep them.
var wantStepUpScopes = map[string][]string{
	rev20251125: {baseScope, server.ScopeNotesWrite, server.ScopeNotesRead},
	rev20260728: {baseScope, server.ScopeNotesWrite},
}

// TestStepUp: a client holding mcp:tools notes:read calls notes_write,
// gets 403 insufficient_scope with the exact challenge, re-authorizes for
// the union of its scopes and the challenged ones, and succeeds.
func TestStepUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			ctx := testContext(t)
			tenant := "tenant-s" + rev[:4]
			hint := "stepper@" + tenant
			cs, rec := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev, loginHint: hint, extraScopes: []string{server.ScopeNotesRead}})

			var who server.WhoamiResult
			callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &who)
			// The go-sdk requests scopes in map order (authutil.UnionScopes), so
			// compare sets.
			slices.Sort(who.Scopes)
			if !slices.Equal(who.Scopes, []string{baseScope, server.ScopeNotesRead}) {
				t.Fatalf("initial scopes = %q, want [mcp:tools notes:read]", who.Scopes)
			}
			before := e.authorizations()

			var wrote server.NotesWriteResult
			callJSON(ctx, t, cs, server.ToolNotesWrite, map[string]any{"text": "stepped up"}, &wrote)
			if wrote.Tenant != tenant || wrote.Note.Text != "stepped up" || wrote.Note.Author != strings.Split(hint, "@")[0] {
				t.Errorf("notes_write = %+v", wrote)
			}
			if n := e.authorizations() - before; n != 1 {
				t.Errorf("authorization requests for the step-up = %d, want 1", n)
			}

			forbidden := rec.withStatus(403)
			if len(forbidden) != 1 {
				t.Fatalf("403 answers = %d (%+v), want exactly 1", len(forbidden), forbidden)
			}
			want := e.insufficientScope(wantStepUpScopes[rev]...)
			if !slices.Equal(forbidden[0].wwwAuth, []string{want}) {
				t.Errorf("403 WWW-Authenticate = %q,\nwant %q", forbidden[0].wwwAuth, want)
			}
			if rev == rev20260728 && (forbidden[0].mcpMethod != "tools/call" || forbidden[0].mcpName != server.ToolNotesWrite) {
				t.Errorf("403 request headers Mcp-Method=%q Mcp-Name=%q", forbidden[0].mcpMethod, forbidden[0].mcpName)
			}

			// The new token holds the union: nothing granted before is lost.
			callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &who)
			slices.Sort(who.Scopes)
			if wantAll := []string{baseScope, server.ScopeNotesRead, server.ScopeNotesWrite}; !slices.Equal(who.Scopes, wantAll) {
				t.Errorf("scopes after step-up = %q, want %q", who.Scopes, wantAll)
			}
			var list server.NotesListResult
			callJSON(ctx, t, cs, server.ToolNotesList, map[string]any{}, &list)
			if len(list.Notes) != 1 || list.Notes[0].Text != "stepped up" {
				t.Errorf("notes_list after step-up = %+v", list)
			}
		})
	}
}

// TestStepUpRefused: the authorization server never grants notes:write
// (devas GrantScopes), either by granting the other scopes only or by
// denying the request. The step-up cannot succeed, and the SDK client must
// stop after one re-authorization with an error, not loop; nothing is
// written.
func TestStepUpRefused(t *testing.T) {
	t.Parallel()
	withoutWrite := func(_, _ string, requested []string) []string {
		return slices.DeleteFunc(requested, func(s string) bool { return s == server.ScopeNotesWrite })
	}
	tests := []struct {
		name  string
		grant func(clientID, subject string, requested []string) []string
		// wantDenied: the authorization response is an error
		// (access_denied), which the SDK returns; otherwise the token
		// lacks the scope and the retried request gets the second 403.
		wantDenied bool
	}{
		{name: "partial grant", grant: withoutWrite},
		{name: "denied", grant: func(c, s string, requested []string) []string {
			if slices.Contains(requested, server.ScopeNotesWrite) {
				return nil
			}
			return requested
		}, wantDenied: true},
	}
	for _, tt := range tests {
		e := newEnv(t, envConfig{grantScopes: tt.grant})
		for _, rev := range revisions {
			t.Run(tt.name+"/"+rev, func(t *testing.T) {
				ctx := testContext(t)
				tenant := "tenant-r" + rev[:4]
				cs, rec := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: rev, loginHint: "refused@" + tenant, extraScopes: []string{server.ScopeNotesRead}})
				before := e.authorizations()

				res, err := cs.CallTool(ctx, callParams(server.ToolNotesWrite, map[string]any{"text": "never"}))
				if err == nil {
					t.Fatalf("notes_write succeeded (%+v), want an error", res)
				}
				var aerr *authorizationError
				switch {
				case tt.wantDenied && (!errors.As(err, &aerr) || aerr.Code != "access_denied"):
					t.Errorf("error = %v, want the access_denied authorization response", err)
				case !tt.wantDenied && !strings.Contains(err.Error(), "Forbidden"):
					t.Errorf("error = %v, want the final 403 (Forbidden)", err)
				}
				if n := e.authorizations() - before; n != 1 {
					t.Errorf("authorization requests = %d, want exactly 1 re-authorization", n)
				}
				want403 := 2 // before and after the one re-authorization
				if tt.wantDenied {
					want403 = 1 // no new token, no retry
				}
				forbidden := rec.withStatus(403)
				if len(forbidden) != want403 {
					t.Fatalf("403 answers = %d, want %d", len(forbidden), want403)
				}
				want := e.insufficientScope(wantStepUpScopes[rev]...)
				for i, x := range forbidden {
					if !slices.Equal(x.wwwAuth, []string{want}) {
						t.Errorf("403 #%d WWW-Authenticate = %q, want %q", i+1, x.wwwAuth, want)
					}
				}
				// The session may or may not survive (the SDK fails the
				// connection after a non-transient HTTP error); either way
				// a further call authorizes nothing more.
				_, _ = cs.CallTool(ctx, callParams(server.ToolWhoami, nil))
				if n := e.authorizations() - before; n != 1 {
					t.Errorf("authorization requests after a further call = %d, want still 1", n)
				}
				// Nothing was written.
				r := rawPost(ctx, t, e.mcpURL, rawRequest{token: e.token(t, "checker", tenant, baseScope, server.ScopeNotesRead),
					revision: rev20260728, method: "tools/call", params: toolCall(server.ToolNotesList, nil)})
				var list server.NotesListResult
				if tr := r.tool(t); json.Unmarshal(tr.StructuredContent, &list) != nil || len(list.Notes) != 0 {
					t.Errorf("notes of %s = %s, want none", tenant, r.body)
				}
			})
		}
	}
}
