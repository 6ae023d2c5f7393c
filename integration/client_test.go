package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// codeAuthorizer is a client.Authorizer that runs the OAuth 2.1
// authorization code flow with PKCE and RFC 8707 resource against the
// development authorization server, as the pre-registered public client
// rawClientID, and records what it was asked for.
type codeAuthorizer struct {
	loginHint string

	mu    sync.Mutex
	calls []client.AuthorizeRequest
}

func (a *codeAuthorizer) requests() []client.AuthorizeRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

func (a *codeAuthorizer) Authorize(ctx context.Context, req client.AuthorizeRequest) (oauth2.TokenSource, error) {
	a.mu.Lock()
	a.calls = append(a.calls, req)
	a.mu.Unlock()
	if req.ResourceMetadata == nil || len(req.ResourceMetadata.AuthorizationServers) == 0 {
		return nil, errors.New("no authorization server in the metadata")
	}
	issuer := req.ResourceMetadata.AuthorizationServers[0]
	hc := &http.Client{Timeout: 10 * time.Second}
	if req.DPoP != nil { // RFC 9449 §5: a token bound to the transport's key
		hc.Transport = req.DPoP.TokenTransport(nil)
	}
	md, err := asmeta.Discover(ctx, hc, issuer)
	if err != nil {
		return nil, err
	}
	cfg := oauth2.Config{
		ClientID:    rawClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirectURI,
		Scopes:      req.Scopes,
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	q, err := followAuthorize(ctx, cfg.AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", req.Resource)), a.loginHint)
	if err != nil {
		return nil, err
	}
	if q.Get("state") != state || q.Get("iss") != md.Issuer {
		return nil, fmt.Errorf("authorization response state/iss mismatch")
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", req.Resource))
	if err != nil {
		return nil, err
	}
	return oauth2.StaticTokenSource(tok), nil
}

// TestClientTransportStepUp drives raw MCP 2026-07-28 HTTP requests
// through mcpguard's client transport: a token holding mcp:tools
// notes:read calls notes_write, the 403 makes the transport ask the
// Authorizer for the union of what it holds and what the challenge names,
// and the resent request succeeds.
func TestClientTransportStepUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	initial := []string{baseScope, server.ScopeNotesRead}
	az := &codeAuthorizer{loginHint: "carol@tenant-c"}
	tr, err := client.New(client.Config{
		Resource:      e.mcpURL,
		TokenSource:   oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.token(t, "carol", "tenant-c", initial...)}),
		GrantedScopes: initial,
		Authorizer:    az,
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	before := e.authorizations()

	r := rawPost(ctx, t, e.mcpURL, rawRequest{client: hc, revision: rev20260728, method: "tools/call",
		params: toolCall(server.ToolNotesWrite, map[string]any{"text": "via the mcpguard transport"})})
	if res := r.tool(t); res.IsError {
		t.Fatalf("notes_write: %s", r.body)
	}
	calls := az.requests()
	if len(calls) != 1 || e.authorizations()-before != 1 {
		t.Fatalf("Authorize calls = %d, /authorize requests = %d, want 1 and 1", len(calls), e.authorizations()-before)
	}
	got := calls[0]
	wantScopes := []string{baseScope, server.ScopeNotesRead, server.ScopeNotesWrite}
	wantChallenge := challenge.Challenge{
		Scheme: "Bearer", Error: challenge.InsufficientScope,
		Scope:            []string{baseScope, server.ScopeNotesWrite},
		ResourceMetadata: e.metaURL,
		ErrorDescription: "The operation requires additional scope",
	}
	if got.Reason != "insufficient_scope" || !slices.Equal(got.Scopes, wantScopes) || got.Resource != e.mcpURL {
		t.Errorf("AuthorizeRequest = reason %q scopes %q resource %q, want %q %q %q",
			got.Reason, got.Scopes, got.Resource, "insufficient_scope", wantScopes, e.mcpURL)
	}
	if got.Challenge.String() != wantChallenge.String() {
		t.Errorf("challenge = %q, want %q", got.Challenge.String(), wantChallenge.String())
	}
	if got.ResourceMetadata == nil || got.ResourceMetadata.Resource != e.mcpURL {
		t.Errorf("resource metadata = %+v", got.ResourceMetadata)
	}

	// The new token kept notes:read: listing needs no further round.
	r = rawPost(ctx, t, e.mcpURL, rawRequest{client: hc, revision: rev20260728, method: "tools/call", params: toolCall(server.ToolNotesList, nil)})
	if res := r.tool(t); res.IsError {
		t.Fatalf("notes_list: %s", r.body)
	}
	if n := len(az.requests()); n != 1 {
		t.Errorf("Authorize calls after notes_list = %d, want still 1", n)
	}
}

// TestClientTransportFromNothing: no initial token; the first request's
// 401 leads to an authorization for the challenged base scope, a later
// 403 to a step-up for notes:read, both within bounded RoundTrips.
func TestClientTransportFromNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	ctx := testContext(t)
	az := &codeAuthorizer{loginHint: "dave@tenant-d"}
	tr, err := client.New(client.Config{Resource: e.mcpURL, Authorizer: az})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	for _, rev := range revisions {
		for _, tool := range []string{server.ToolWhoami, server.ToolNotesList} {
			r := rawPost(ctx, t, e.mcpURL, rawRequest{client: hc, revision: rev, method: "tools/call", params: toolCall(tool, nil)})
			if res := r.tool(t); res.IsError {
				t.Fatalf("%s %s: %s", rev, tool, r.body)
			}
		}
	}
	calls := az.requests()
	if len(calls) != 2 {
		t.Fatalf("Authorize calls = %d, want 2", len(calls))
	}
	if c := calls[0]; c.Reason != "unauthorized" || !slices.Equal(c.Scopes, []string{baseScope}) {
		t.Errorf("first authorization: reason %q scopes %q, want %q [mcp:tools]", c.Reason, c.Scopes, "unauthorized")
	}
	if c := calls[1]; c.Reason != "insufficient_scope" || !slices.Equal(c.Scopes, []string{baseScope, server.ScopeNotesRead}) {
		t.Errorf("step-up: reason %q scopes %q, want %q [mcp:tools notes:read]", c.Reason, c.Scopes, "insufficient_scope")
	}
}

// TestClientTransportRefused: the authorization server never grants
// notes:write. After one authorization the transport sees a challenge
// asking only for what it already requested and stops with ErrStepUpLoop
// instead of prompting the user forever.
func TestClientTransportRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{grantScopes: func(_, _ string, requested []string) []string {
		return slices.DeleteFunc(requested, func(s string) bool { return s == server.ScopeNotesWrite })
	}})
	ctx := testContext(t)
	initial := []string{baseScope, server.ScopeNotesRead}
	az := &codeAuthorizer{loginHint: "erin@tenant-e"}
	tr, err := client.New(client.Config{
		Resource:      e.mcpURL,
		TokenSource:   oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.token(t, "erin", "tenant-e", initial...)}),
		GrantedScopes: initial,
		Authorizer:    az,
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	before := e.authorizations()
	_, err = rawDo(ctx, e.mcpURL, rawRequest{client: hc, revision: rev20260728, method: "tools/call",
		params: toolCall(server.ToolNotesWrite, map[string]any{"text": "never"})})
	if !errors.Is(err, &client.Error{Reason: "step_up_loop"}) {
		t.Fatalf("error = %v, want a client.Error step_up_loop", err)
	}
	var ce *client.Error
	if !errors.As(err, &ce) || ce.StatusCode != http.StatusForbidden || ce.Challenge.Error != challenge.InsufficientScope {
		t.Errorf("error = %#v, want a *client.Error for the 403", err)
	}
	if n, m := len(az.requests()), e.authorizations()-before; n != 1 || m != 1 {
		t.Errorf("Authorize calls = %d, /authorize requests = %d, want 1 and 1", n, m)
	}
}
