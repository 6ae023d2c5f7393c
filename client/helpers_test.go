package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
)

// fake is a loopback MCP server at /mcp with its protected-resource
// metadata at the path-inserted well-known URL. Tokens are "tok:" followed
// by their comma-separated scopes, so the server needs no state.
type fake struct {
	srv      *httptest.Server
	resource string // srv.URL + "/mcp"
	prmURL   string

	mu       sync.Mutex
	requests int      // requests to /mcp
	prmHits  int      // metadata requests
	authz    []string // Authorization header of every /mcp request
	bodies   []string // body of every /mcp request

	// respond answers the n-th (1-based) request to /mcp; nil => scoped.
	respond func(f *fake, n int, w http.ResponseWriter, r *http.Request)
	// prmDoc returns the metadata JSON; nil => a valid document.
	prmDoc func(f *fake) string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.resource = f.srv.URL + "/mcp"
	f.prmURL = f.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		f.mu.Lock()
		f.prmHits++
		doc := f.prmDoc
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if doc != nil {
			_, _ = io.WriteString(w, doc(f))
			return
		}
		_, _ = io.WriteString(w, metadataJSON(f.resource, "files:read"))
	case "/mcp":
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests++
		n := f.requests
		f.authz = append(f.authz, r.Header.Get("Authorization"))
		f.bodies = append(f.bodies, string(b))
		respond := f.respond
		f.mu.Unlock()
		if respond == nil {
			respond = scoped
		}
		respond(f, n, w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fake) counts() (requests, prmHits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.prmHits
}

func metadataJSON(resource string, scopes ...string) string {
	b, _ := json.Marshal(map[string]any{
		"resource":              resource,
		"authorization_servers": []string{"https://as.example.com"},
		"scopes_supported":      scopes,
	})
	return string(b)
}

// tokenScopes decodes the scopes of a "Bearer tok:a,b" header.
func tokenScopes(authz string) ([]string, bool) {
	s, ok := strings.CutPrefix(authz, "Bearer tok:")
	if !ok {
		return nil, false
	}
	if s == "" {
		return []string{}, true
	}
	return strings.Split(s, ","), true
}

// scoped is the well-behaved MCP 2026-07-28 server: the request needs the
// scopes in its "need" query parameter (default files:read); a missing or
// unknown token gets 401, a token without them gets a 403 listing only the
// operation's scopes.
func scoped(f *fake, _ int, w http.ResponseWriter, r *http.Request) {
	need := strings.Fields(r.URL.Query().Get("need"))
	if len(need) == 0 {
		need = []string{"files:read"}
	}
	have, ok := tokenScopes(r.Header.Get("Authorization"))
	if !ok {
		challenge.Write(w, challenge.Challenge{ResourceMetadata: f.prmURL, Scope: need})
		return
	}
	for _, s := range need {
		if !slices.Contains(have, s) {
			challenge.Write(w, challenge.StepUp(f.prmURL, need...))
			return
		}
	}
	_, _ = io.WriteString(w, "ok")
}

// fixed answers every request with status and WWW-Authenticate values
// (with "{prm}" replaced by the metadata URL).
func fixed(status int, values ...string) func(*fake, int, http.ResponseWriter, *http.Request) {
	return func(f *fake, _ int, w http.ResponseWriter, _ *http.Request) {
		for _, v := range values {
			w.Header().Add("WWW-Authenticate", strings.ReplaceAll(v, "{prm}", f.prmURL))
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "denied")
	}
}

// fakeAuthz mints "tok:<scopes>" tokens.
type fakeAuthz struct {
	mu    sync.Mutex
	calls []AuthorizeRequest
	// grant maps the requested scopes to the granted ones; nil => same.
	grant func([]string) []string
	// withScope puts the RFC 6749 §5.1 "scope" member into the token.
	withScope bool
	err       error
	// wait, if not nil, is received from before returning.
	wait chan struct{}
}

func (a *fakeAuthz) Authorize(ctx context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	a.mu.Lock()
	a.calls = append(a.calls, req)
	a.mu.Unlock()
	if a.wait != nil {
		select {
		case <-a.wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	granted := req.Scopes
	if a.grant != nil {
		granted = a.grant(req.Scopes)
	}
	tok := &oauth2.Token{AccessToken: "tok:" + strings.Join(granted, ","), TokenType: "Bearer"}
	if a.withScope {
		tok = tok.WithExtra(map[string]any{"scope": strings.Join(granted, " ")})
	}
	return oauth2.StaticTokenSource(tok), nil
}

func (a *fakeAuthz) scopes() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [][]string
	for _, c := range a.calls {
		out = append(out, c.Scopes)
	}
	return out
}

// staticToken returns a token source for "tok:<scopes>".
func staticToken(scopes ...string) oauth2.TokenSource {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok:" + strings.Join(scopes, ",")})
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// grantedScopes returns the scopes of the current token as far as the
// transport knows them: the "scope" member of the token response
// (RFC 6749 §5.1) if the token carries one, else the scopes last requested
// from the Authorizer, else Config.GrantedScopes.
func (t *Transport) grantedScopes() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.granted)
}
