package integration

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/internal/mwdefault"
)

// TestStepUpTenSessions: a user whose client opens ten fresh sessions in a
// row, each starting with the base scopes and stepping up for notes_write,
// is never refused (issue #11 item 1). Before issue #11 the fourth session
// got the terminal 403, because successes never reset the bound.
func TestStepUpTenSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	for session := 1; session <= 10; session++ {
		cs, rec := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev20260728, loginHint: "stepper@tenant-ten"})
		res, err := cs.CallTool(ctx, callParams(server.ToolNotesWrite, map[string]any{"text": "x"}))
		if err != nil || res.IsError {
			t.Fatalf("session %d: notes_write: %v %v; exchanges %+v", session, err, res, rec.exchanges())
		}
		forbidden := rec.withStatus(http.StatusForbidden)
		if len(forbidden) != 1 || !strings.Contains(strings.Join(forbidden[0].wwwAuth, ""), ` scope="`) {
			t.Fatalf("session %d: 403 answers %+v, want one step-up challenge", session, forbidden)
		}
		cs.Close()
	}
}

// TestStepUpNeverGranted: the authorization server never grants
// notes:write. The go-sdk client re-authorizes on a step-up challenge,
// retries once, and on a second 403 closes its session; the user's client
// then starts a fresh session and tries again. After StepUpLimit challenges
// the principal gets the terminal answer, on which the go-sdk starts no
// new authorization: step-up authorizations stay bounded however many
// sessions the client opens.
func TestStepUpNeverGranted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{grantScopes: func(_, _ string, requested []string) []string {
		return slices.DeleteFunc(slices.Clone(requested), func(s string) bool { return s == server.ScopeNotesWrite })
	}})
	ctx := testContext(t)
	const sessions = 6
	var challenges, terminal int
	for i := range sessions {
		cs, rec := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev20260728})
		res, err := cs.CallTool(ctx, callParams(server.ToolNotesWrite, map[string]any{"text": "x"}))
		if err == nil && !res.IsError {
			t.Fatalf("session %d: notes_write succeeded without notes:write", i)
		}
		for _, x := range rec.withStatus(http.StatusForbidden) {
			switch h := strings.Join(x.wwwAuth, ""); {
			case h == e.insufficientScope(baseScope, server.ScopeNotesWrite):
				challenges++
			case h == terminalChallenge(e.metaURL):
				terminal++
			default:
				t.Errorf("403 with WWW-Authenticate %q", x.wwwAuth)
			}
		}
		cs.Close()
	}
	if challenges != mwdefault.StepUpLimit {
		t.Errorf("step-up challenges = %d, want %d", challenges, mwdefault.StepUpLimit)
	}
	if terminal == 0 {
		t.Errorf("no terminal answer in %d sessions", sessions)
	}
	// Each session authorizes once to connect (the 401); step-up
	// authorizations come on top, at most one per challenge.
	stepUps := e.authorizations() - sessions
	if stepUps > mwdefault.StepUpLimit {
		t.Errorf("step-up authorizations = %d, want at most %d", stepUps, mwdefault.StepUpLimit)
	}
	t.Logf("%d sessions: %d challenges, %d terminal answers, %d step-up authorizations", sessions, challenges, terminal, stepUps)
}

// terminalChallenge is the WWW-Authenticate of the terminal 403 (the
// step-up bound reached): a Bearer challenge with resource_metadata only,
// chosen by measuring the go-sdk and TypeScript SDK clients
// (TestTerminalChallengeCandidates, docs/policy.md).
func terminalChallenge(metaURL string) string {
	return `Bearer resource_metadata="` + metaURL + `"`
}

// TestTerminalChallengeCandidates measures what the go-sdk v1.8.0 client
// does with each candidate terminal answer to a tools/call: a 403 whose
// WWW-Authenticate is the candidate. It records how many authorizations
// one CallTool starts and how many times the request is sent. The chosen
// answer (resource_metadata only) must start none; the measured outcome of
// every other candidate is asserted too, so that an SDK upgrade that
// changes it shows up here.
func TestTerminalChallengeCandidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		header    func(metaURL string) string
		wantAuths int // authorizations started by one CallTool
		wantSent  int // notes_write requests sent by one CallTool
	}{
		{"step-up challenge (scope)", func(m string) string {
			return `Bearer error="insufficient_scope", scope="mcp:tools notes:write", resource_metadata="` + m + `", error_description="The operation requires additional scope"`
		}, 1, 2},
		{"insufficient_scope, no scope", func(m string) string {
			return `Bearer error="insufficient_scope", resource_metadata="` + m + `", error_description="Step-up limit reached"`
		}, 1, 2},
		{"insufficient_scope, no scope, no resource_metadata", func(string) string {
			return `Bearer error="insufficient_scope", error_description="Step-up limit reached"`
		}, 1, 2},
		{"resource_metadata only (chosen)", terminalChallenge, 0, 2},
		{"no WWW-Authenticate (before issue #11)", func(string) string { return "" }, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var metaURL atomic.Value
			var sent atomic.Int32
			e := newEnv(t, envConfig{wrapMCP: func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						b, _ := io.ReadAll(r.Body)
						r.Body = io.NopCloser(bytes.NewReader(b))
						if bytes.Contains(b, []byte(`"tools/call"`)) && bytes.Contains(b, []byte(server.ToolNotesWrite)) {
							sent.Add(1)
							if h := c.header(metaURL.Load().(string)); h != "" {
								w.Header().Set("WWW-Authenticate", h)
							}
							w.Header().Set("Content-Type", "application/json")
							w.WriteHeader(http.StatusForbidden)
							_, _ = io.WriteString(w, `{"error":"insufficient_scope"}`)
							return
						}
					}
					next.ServeHTTP(w, r)
				})
			}})
			metaURL.Store(e.metaURL)
			ctx := testContext(t)
			cs, _ := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: rev20260728})
			before := e.authorizations()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.ToolNotesWrite, Arguments: map[string]any{"text": "x"}})
			if err == nil {
				t.Fatal("CallTool succeeded")
			}
			auths := e.authorizations() - before
			t.Logf("header %q: %d authorizations, %d requests sent", c.header("RM"), auths, sent.Load())
			if auths != c.wantAuths || int(sent.Load()) != c.wantSent {
				t.Errorf("got %d authorizations and %d requests, want %d and %d", auths, sent.Load(), c.wantAuths, c.wantSent)
			}
		})
	}
}
