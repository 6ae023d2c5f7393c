package integration

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeTimeout bounds one driver run (a real client's whole flow).
const nodeTimeout = 60 * time.Second

// tsClient is one TypeScript SDK line and an MCP revision it speaks.
type tsClient struct{ sdk, revision string }

// tsClients: the v1 line (@modelcontextprotocol/sdk) speaks 2025-11-25
// and older; the v2 line (@modelcontextprotocol/client) speaks 2025-11-25
// (its default, "legacy" negotiation) and 2026-07-28 (pinned).
var tsClients = []tsClient{{"v1", rev20251125}, {"v2", rev20251125}, {"v2", rev20260728}}

// TestTypeScriptClients runs the official TypeScript MCP SDK clients,
// v1 and v2, through the whole flow against the example server as a user
// starts it (go run ./examples/mcpserver, embedded development
// authorization server): with dynamic client registration against the
// default server, and with a Client ID Metadata Document served on
// loopback against the server started with -dev-insecure-cimd-loopback.
// Every client registers with the first challenge's scope and then steps
// up, which devas must allow.
func TestTypeScriptClients(t *testing.T) {
	node := requireNode(t)
	t.Parallel()
	bin := exampleBinary(t)
	t.Run("dcr", func(t *testing.T) {
		t.Parallel()
		ex := startExample(t, bin, nil)
		for _, c := range tsClients {
			t.Run(c.sdk+"/"+c.revision, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
				defer cancel()
				r := runDriver(ctx, t, node, "--sdk", c.sdk, "--revision", c.revision, "--url", ex.mcpURL, "--notes-list")
				checkFlow(t, r, flowWant{mcpURL: ex.mcpURL, issuer: ex.issuer, registration: "dcr", revision: c.revision, subject: "dev-user", notesList: true})
			})
		}
	})
	t.Run("cimd", func(t *testing.T) {
		t.Parallel()
		clientID, ca, fetches := cimdDocServer(t)
		ex := startExample(t, bin, nil, "-dev-insecure-cimd-loopback", "-dev-cimd-root-ca", ca)
		for _, c := range tsClients {
			t.Run(c.sdk+"/"+c.revision, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
				defer cancel()
				r := runDriver(ctx, t, node, "--sdk", c.sdk, "--revision", c.revision, "--url", ex.mcpURL, "--cimd", clientID)
				checkFlow(t, r, flowWant{mcpURL: ex.mcpURL, issuer: ex.issuer, registration: "cimd", clientID: clientID, revision: c.revision, subject: "dev-user"})
			})
		}
		t.Cleanup(func() {
			if fetches() == 0 {
				t.Errorf("the authorization server never fetched the metadata document")
			}
		})
	})
}

// flowWant is what checkFlow expects of a driver run.
type flowWant struct {
	mcpURL, issuer string
	registration   string // "dcr", "cimd" or "preregistered"
	clientID       string // the client_id, for cimd and preregistered
	revision       string
	subject        string
	opaque         bool // access tokens are not JWTs (introspection)
	// registeredScope is the scope the registration response must carry
	// (dcr). Empty means the first challenge's, baseScope.
	registeredScope string
	// notesList: the driver ran with --notes-list, a second step-up.
	notesList bool
}

// annotatedTools is the example's tools/list in its default mode
// (annotate), as the driver prints it: every tool with the scopes its
// call needs (SEP-1488 _meta.securitySchemes).
var annotatedTools = []string{
	"notes_list=oauth2[" + baseScope + " notes:read]",
	"notes_write=oauth2[" + baseScope + " notes:write]",
	"whoami=oauth2[" + baseScope + "]",
}

// checkFlow checks each step of a driver run, reports the failed ones,
// and logs the run as a table row (go test -v shows it).
func checkFlow(t *testing.T, r *driverResult, w flowWant) {
	t.Helper()
	u, _ := url.Parse(w.mcpURL)
	metaURL := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.Path
	type step struct {
		name string
		ok   bool
	}
	var steps []step
	check := func(name string, ok bool, format string, args ...any) {
		t.Helper()
		steps = append(steps, step{name, ok})
		if !ok {
			t.Errorf("%s: "+format, append([]any{name}, args...)...)
		}
	}
	find := func(method, prefix string, status int) int {
		for i, e := range r.Trace {
			if e.Method == method && strings.HasPrefix(e.URL, prefix) && (status == 0 || e.Status == status) {
				return i
			}
		}
		return -1
	}
	if !r.OK {
		t.Errorf("driver: %s", r.Error)
	}

	first := len(r.Trace) > 0 && r.Trace[0].Method == "POST" && r.Trace[0].URL == w.mcpURL && r.Trace[0].Status == 401 &&
		r.Trace[0].WWWAuthenticate == fmt.Sprintf(`Bearer scope="%s", resource_metadata="%s"`, baseScope, metaURL)
	check("401", first, "first request: %+v", firstOf(r))
	check("PRM", find("GET", metaURL, 200) > 0, "no GET %s 200", metaURL)
	asMeta := find("GET", w.issuer+"/.well-known/", 200)
	check("AS metadata", asMeta > 0, "no GET of %s metadata", w.issuer)
	reg := find("POST", w.issuer, 0)
	var regOK bool
	switch w.registration {
	case "dcr":
		i := find("POST", w.issuer+"/reg", 201)
		want := w.registeredScope
		if want == "" {
			want = baseScope
		}
		regOK = i > asMeta && r.Trace[i].RegisteredScope != nil && *r.Trace[i].RegisteredScope == want && r.ClientID == r.Trace[i].ClientID && r.ClientID != ""
		reg = i
	default:
		regOK = r.ClientID == w.clientID && find("POST", w.issuer+"/reg", 0) < 0
	}
	check("registration "+w.registration, regOK, "client_id %q, trace %+v", r.ClientID, r.Trace[max(reg, 0)])
	az := len(r.Authorizations) > 0 && r.Authorizations[0].CodeChallengeMethod == "S256" && r.Authorizations[0].HasCodeChallenge &&
		r.Authorizations[0].Resource == w.mcpURL && r.Authorizations[0].Scope == baseScope && r.Authorizations[0].ClientID == r.ClientID
	check("authorize (PKCE S256, resource)", az, "%+v", r.Authorizations)
	tok := len(r.Tokens) > 0 && find("POST", w.issuer, 200) >= 0
	if tok && !w.opaque {
		c := r.Tokens[0].Claims
		tok = c != nil && audIs(c.Aud, w.mcpURL) && c.Scope == baseScope && c.ClientID == r.ClientID && c.Sub == w.subject
	}
	check("token", tok, "%+v", r.Tokens)
	// The example annotates tools/list (its default): a token with only
	// the base scope sees every tool with the scopes it needs, so that the
	// client calls notes_write and steps up.
	check("tools/list", slices.Equal(r.Tools, annotatedTools), "%v", r.Tools)
	check("whoami", strings.Contains(r.Whoami, `"subject":"`+w.subject+`"`) && strings.Contains(r.Whoami, `"client_id":"`+r.ClientID+`"`), "%s", r.Whoami)
	want403 := fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s notes:write", resource_metadata="%s", error_description="The operation requires additional scope"`, baseScope, metaURL)
	i403 := -1
	for i, e := range r.Trace {
		if e.Method == "POST" && e.URL == w.mcpURL && e.Status == 403 {
			i403 = i
			break
		}
	}
	check("notes_write 403", i403 > 0 && r.Trace[i403].WWWAuthenticate == want403, "trace index %d", i403)
	n := 2
	if w.notesList {
		n = 3
	}
	up := len(r.Authorizations) == n && strings.Contains(r.Authorizations[1].Scope, "notes:write") && len(r.Tokens) == n &&
		r.Tokens[1].Scope != nil && strings.Contains(*r.Tokens[1].Scope, "notes:write")
	check("step-up", up, "authorizations %+v tokens %+v", r.Authorizations, r.Tokens)
	check("notes_write", r.NotesWrite != nil && !r.NotesWrite.IsError && strings.Contains(r.NotesWrite.Text, "hello from"), "%+v", r.NotesWrite)
	if w.notesList {
		// A second 403 and step-up, for notes:read; the token keeps
		// notes:write (the union of 2025-11-25, the accumulation of
		// 2026-07-28).
		up2 := len(r.Tokens) == 3 && r.Tokens[2].Scope != nil && strings.Contains(*r.Tokens[2].Scope, "notes:read") &&
			strings.Contains(*r.Tokens[2].Scope, "notes:write")
		check("step-up notes:read", up2, "tokens %+v", r.Tokens)
		check("notes_list", r.NotesList != nil && !r.NotesList.IsError && strings.Contains(r.NotesList.Text, "hello from"), "%+v", r.NotesList)
	}
	check("revision", r.ProtocolVersion == w.revision, "negotiated %q", r.ProtocolVersion)

	var row strings.Builder
	fmt.Fprintf(&row, "| %s | %s | %s |", r.Client, w.revision, w.registration)
	for _, s := range steps {
		mark := "ok"
		if !s.ok {
			mark = "FAIL"
		}
		fmt.Fprintf(&row, " %s %s |", s.name, mark)
	}
	t.Log(row.String())
}

func firstOf(r *driverResult) any {
	if len(r.Trace) == 0 {
		return nil
	}
	return r.Trace[0]
}

// audIs reports whether a JWT aud claim (string or array) is exactly want.
func audIs(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		return len(a) == 1 && a[0] == want
	}
	return false
}
