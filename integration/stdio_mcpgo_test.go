package integration

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestStdioMCPGoClient: mark3labs/mcp-go's OAuth client through mcpguard
// proxy in front of the everything server on stdio, as TestMCPGoClient
// runs it against the example: dynamic registration, token, get-env
// refused with 403 insufficient_scope (which mcp-go reports as
// "internal error: insufficient_scope" and leaves to the application),
// the application's step-up with the same registration, and the call.
func TestStdioMCPGoClient(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	resource, issuer := newStdioClientsEnv(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}, "get-env")
	for _, rev := range []string{rev20251125, rev20260728} {
		t.Run(rev, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			rec := &httpTrace{}
			hc := &http.Client{Transport: rec}
			newClient := func(scopes []string, clientID string) (*mcpgo.Client, *transport.OAuthHandler) {
				t.Helper()
				cfg := mcpgo.OAuthConfig{ClientID: clientID, RedirectURI: redirectURI, Scopes: scopes,
					TokenStore: mcpgo.NewMemoryTokenStore(), PKCEEnabled: true, HTTPClient: hc}
				c, err := mcpgo.NewOAuthStreamableHttpClient(resource, cfg, transport.WithHTTPBasicClient(hc))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				c = mcpgo.NewClient(c.GetTransport(), mcpgo.WithProtocolVersion(rev))
				init := mcp.InitializeRequest{}
				init.Params.ClientInfo = mcp.Implementation{Name: "mcpguard-mcp-go", Version: "0"}
				_, err = c.Initialize(ctx, init)
				if !mcpgo.IsOAuthAuthorizationRequiredError(err) {
					t.Fatalf("Initialize without a token = %v, want OAuthAuthorizationRequiredError", err)
				}
				h := mcpgo.GetOAuthHandler(err)
				if clientID == "" {
					if err := h.RegisterClient(ctx, "mcpguard mcp-go client"); err != nil {
						t.Fatalf("RegisterClient: %v", err)
					}
				}
				verifier, _ := mcpgo.GenerateCodeVerifier()
				state, _ := mcpgo.GenerateState()
				authURL, err := h.GetAuthorizationURL(ctx, state, mcpgo.GenerateCodeChallenge(verifier))
				if err != nil {
					t.Fatalf("GetAuthorizationURL: %v", err)
				}
				if q, _ := url.Parse(authURL); q.Query().Get("resource") != resource || q.Query().Get("code_challenge_method") != "S256" {
					t.Errorf("authorization URL %s", authURL)
				}
				got, err := followAuthorize(ctx, authURL, "")
				if err != nil {
					t.Fatalf("authorize: %v", err)
				}
				if err := h.ProcessAuthorizationResponse(ctx, got.Get("code"), got.Get("state"), verifier); err != nil {
					t.Fatalf("ProcessAuthorizationResponse: %v", err)
				}
				if _, err := c.Initialize(ctx, init); err != nil {
					t.Fatalf("Initialize with a token: %v", err)
				}
				return c, h
			}
			c, h := newClient([]string{baseScope}, "")
			if !rec.has("POST "+issuer+"/register 201") || !rec.has("POST "+issuer+"/token 200") || h.GetClientID() == "" {
				t.Errorf("registration and token: %v", rec.lines)
			}
			if res, err := c.CallTool(ctx, mcpgoCall("echo", map[string]any{"message": "mcp-go over stdio"})); err != nil || !strings.Contains(mcpgoText(res), "mcp-go over stdio") {
				t.Fatalf("echo: %v %s", err, mcpgoText(res))
			}
			_, err := c.CallTool(ctx, mcpgoCall("get-env", map[string]any{}))
			if err == nil || !errors.Is(err, mcp.ErrInternalError) || !rec.has("POST "+resource+" 403 Bearer error=\"insufficient_scope\", scope=\""+baseScope+" "+envScope+"\"") {
				t.Errorf("get-env with the base scope: %v; trace %v", err, rec.lines)
			}
			c2, _ := newClient([]string{baseScope, envScope}, h.GetClientID())
			res, err := c2.CallTool(ctx, mcpgoCall("get-env", map[string]any{}))
			if err != nil || res.IsError || !strings.Contains(mcpgoText(res), "MCPGUARD_USER_SUBJECT") {
				t.Fatalf("get-env after the step-up: %v %s\n%v", err, mcpgoText(res), rec.lines)
			}
		})
	}
}
