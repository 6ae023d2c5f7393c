package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
)

// toolNames lists the tools the session is offered, each as
// "name=type[scopes]" when it carries _meta.securitySchemes.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(testContext(t), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		n := tool.Name
		if s, ok := tool.Meta["securitySchemes"]; ok {
			b, _ := json.Marshal(s)
			var schemes []struct {
				Type   string   `json:"type"`
				Scopes []string `json:"scopes"`
			}
			if err := json.Unmarshal(b, &schemes); err != nil {
				t.Fatalf("%s: securitySchemes %s", tool.Name, b)
			}
			for _, sc := range schemes {
				n += "=" + sc.Type + fmt.Sprint(sc.Scopes)
			}
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestListsByPolicy: with the real go-sdk client, for both session modes,
// the example's tools/list offers every tool with the scopes it needs in
// _meta.securitySchemes by default (annotate), and only the tools the
// caller's token may call with -lists hide.
func TestListsByPolicy(t *testing.T) {
	t.Parallel()
	all := []string{
		server.ToolNotesList + "=oauth2[" + baseScope + " " + server.ScopeNotesRead + "]",
		server.ToolNotesWrite + "=oauth2[" + baseScope + " " + server.ScopeNotesWrite + "]",
		server.ToolWhoami + "=oauth2[" + baseScope + "]",
	}
	for _, mode := range []struct {
		name     string
		stateful bool
		revision string
	}{{"stateless", false, rev20260728}, {"stateful", true, rev20251125}} {
		t.Run(mode.name+"/annotate", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{stateful: mode.stateful})
			base, _ := e.connect(testContext(t), t, sdkClient{reg: viaCIMD, revision: mode.revision, loginHint: "fay@tenant-f"})
			if got := toolNames(t, base); !slices.Equal(got, all) {
				t.Errorf("base scope: tools %q, want %q", got, all)
			}
		})
		t.Run(mode.name+"/hide", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{stateful: mode.stateful, lists: middleware.ListHide})
			ctx := testContext(t)
			base, _ := e.connect(ctx, t, sdkClient{reg: viaCIMD, revision: mode.revision, loginHint: "fay@tenant-f"})
			if got, want := toolNames(t, base), all[2:]; !slices.Equal(got, want) {
				t.Errorf("base scope: tools %q, want %q", got, want)
			}
			reader, _ := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: mode.revision, loginHint: "gus@tenant-g",
				extraScopes: []string{server.ScopeNotesRead}})
			if got, want := toolNames(t, reader), []string{all[0], all[2]}; !slices.Equal(got, want) {
				t.Errorf("notes:read: tools %q, want %q", got, want)
			}
		})
	}
}

// TestPublicOperationsGoSDKClient: with initialize, tools/list and whoami
// public, the go-sdk client without any OAuth configuration connects,
// lists the tools (whoami noauth, the others with their scopes) and calls
// the public one as the anonymous principal; the
// other tools still answer 401 with the usual challenge.
func TestPublicOperationsGoSDKClient(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name     string
		stateful bool
		revision string
	}{{"stateless", false, rev20260728}, {"stateful", true, rev20251125}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{stateful: mode.stateful, public: middleware.PublicOperations{
				Methods: []string{"initialize", "notifications/initialized", "server/discover", "ping", "tools/list"},
				Tools:   []string{server.ToolWhoami},
			}})
			ctx := testContext(t)
			rec := &recorder{base: http.DefaultTransport}
			cl := mcp.NewClient(&mcp.Implementation{Name: "anonymous", Version: "0"}, nil)
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: e.mcpURL, HTTPClient: &http.Client{Transport: rec, Timeout: 10 * time.Second},
				MaxRetries: -1, DisableStandaloneSSE: true,
			}, &mcp.ClientSessionOptions{ProtocolVersion: mode.revision})
			if err != nil {
				t.Fatalf("connect without a token: %v", err)
			}
			defer cs.Close()
			// Annotated (the default): the public tool is noauth, the
			// others name the scopes a sign-in must ask for.
			want := []string{
				server.ToolNotesList + "=oauth2[" + baseScope + " " + server.ScopeNotesRead + "]",
				server.ToolNotesWrite + "=oauth2[" + baseScope + " " + server.ScopeNotesWrite + "]",
				server.ToolWhoami + "=noauth[]",
			}
			if got := toolNames(t, cs); !slices.Equal(got, want) {
				t.Errorf("anonymous tools/list = %q, want %q", got, want)
			}
			var who server.WhoamiResult
			callJSON(ctx, t, cs, server.ToolWhoami, nil, &who)
			if !who.Anonymous || who.Subject != "" || who.Tenant != "" {
				t.Errorf("anonymous whoami = %+v", who)
			}
			if _, err := cs.CallTool(ctx, callParams(server.ToolNotesList, nil)); err == nil {
				t.Error("notes_list without a token succeeded")
			}
			// The last refusal: a stateful client then sends
			// notifications/cancelled in its anonymous session, which
			// passes without a token (202/204).
			xs := rec.exchanges()
			last := xs[len(xs)-1]
			for i := len(xs) - 1; i >= 0 && last.status < 300; i-- {
				last = xs[i]
			}
			if last.status != http.StatusUnauthorized || len(last.wwwAuth) != 1 || last.wwwAuth[0] != noToken(e.metaURL) {
				t.Errorf("notes_list without a token: %d %q, want 401 %q", last.status, last.wwwAuth, noToken(e.metaURL))
			}
			// A bad token is still refused, even for the public tool.
			r := rawPost(ctx, t, e.mcpURL, rawRequest{token: "not-a-token", revision: rev20260728, method: "tools/call", params: toolCall(server.ToolWhoami, nil)})
			if r.status != http.StatusUnauthorized || len(r.wwwAuth) != 1 || r.wwwAuth[0] != invalidToken(e.metaURL) {
				t.Errorf("whoami with a bad token: %d %q", r.status, r.wwwAuth)
			}
		})
	}
}
