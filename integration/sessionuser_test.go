package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// TestStepUpStatefulDCR: the official go-sdk v1.8.0 client with dynamic
// registration steps up inside a stateful session, against the example
// server (stateful go-sdk handler behind the library) and through
// mcpguard proxy in front of it. At step-up the go-sdk client registers a
// new client, so its next requests carry a new client_id in the same
// session: the session is the user's, and they are served. The session
// still refuses bob (404) and alice at another issuer (404), and serves
// alice through a third client. Before the user was the session key, the
// request after the step-up got 404 Session not found and the go-sdk
// closed the session.
func TestStepUpStatefulDCR(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"library", "proxy"} {
		t.Run(via, func(t *testing.T) {
			other := authtest.NewIssuer(t, authtest.IssuerConfig{Now: time.Now})
			e := newEnv(t, envConfig{stateful: true, viaProxy: via == "proxy", alsoTrust: other})
			ctx := testContext(t)
			tenant := "tenant-u" + via
			cs, rec := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: rev20251125, loginHint: "alice@" + tenant})
			sid := cs.ID()
			if sid == "" {
				t.Fatal("no session: the server is not stateful")
			}
			var before server.WhoamiResult
			callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &before)

			var wrote server.NotesWriteResult
			callJSON(ctx, t, cs, server.ToolNotesWrite, map[string]any{"text": "stepped up in session"}, &wrote)
			if wrote.Note.Text != "stepped up in session" || wrote.Note.Author != "alice" || wrote.Tenant != tenant {
				t.Errorf("notes_write = %+v", wrote)
			}
			var after server.WhoamiResult
			callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &after)
			if after.Subject != "alice" || after.ClientID == before.ClientID || !strings.HasPrefix(after.ClientID, "dcr_") {
				t.Errorf("whoami before the step-up %+v, after %+v: want alice through a newly registered client", before, after)
			}
			if cs.ID() != sid {
				t.Errorf("session %q after the step-up, want %q", cs.ID(), sid)
			}
			if n := len(rec.withStatus(http.StatusNotFound)); n != 0 {
				t.Errorf("%d answers 404 in the session: %+v", n, rec.exchanges())
			}

			// Other principals with the session's ID.
			raw := func(token string) int {
				t.Helper()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", rev20251125)
				req.Header.Set("Mcp-Session-Id", sid)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			elsewhere := other.Token(t, authtest.Token{Subject: "alice", Tenant: tenant, ClientID: "alice-app", Audience: []string{e.mcpURL}, Scopes: []string{baseScope}})
			for _, c := range []struct {
				name  string
				token string
				want  int
			}{
				{"bob", e.token(t, "bob", tenant, baseScope), http.StatusNotFound},
				{"alice at another issuer", elsewhere, http.StatusNotFound},
				{"alice at another tenant", e.token(t, "alice", tenant+"-b", baseScope), http.StatusNotFound},
				{"alice through a third client", e.token(t, "alice", tenant, baseScope), http.StatusOK},
			} {
				if got := raw(c.token); got != c.want {
					t.Errorf("%s in alice's session: %d, want %d", c.name, got, c.want)
				}
			}
			// Alice's session still works for her go-sdk client.
			callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &after)
		})
	}
}
