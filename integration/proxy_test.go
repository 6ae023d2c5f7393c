package integration

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/proxy"
)

// startProxy starts mcpguard proxy on ts in front of upstream, trusting
// issuer, with the example server's policy (base scope, per-tool scopes).
func startProxy(t *testing.T, ts *httptest.Server, resource, upstream, issuer string, cfg envConfig) *proxy.Proxy {
	t.Helper()
	dp := map[middleware.DPoPPolicy]string{middleware.DPoPOff: "off", middleware.DPoPAllowed: "allowed", middleware.DPoPRequired: "required"}[cfg.dpop]
	issuers := []string{issuer}
	if cfg.alsoTrust != nil {
		issuers = append(issuers, cfg.alsoTrust.URL)
	}
	policy := cfg.policy
	for _, r := range cfg.rules {
		policy.Rules = append(policy.Rules, proxy.PolicyRule{
			Name: r.Name, Methods: r.Methods, Tools: r.Tools, Prompts: r.Prompts, Resources: r.Resources,
			DenyWhen: r.DenyWhen, RequireScopes: r.RequireScopes, When: r.When,
		})
	}
	px, err := proxy.New(proxy.Config{Logger: cfg.proxyLog, Instrument: cfg.instrument, Routes: []proxy.Route{{
		Resource: resource, Upstream: upstream, Issuers: issuers, Scopes: []string{baseScope},
		Operations: proxy.Operations{
			Tools: map[string][]string{server.ToolWhoami: nil, server.ToolNotesList: {server.ScopeNotesRead}, server.ToolNotesWrite: {server.ScopeNotesWrite}},
			Public: proxy.PublicOperations{
				Methods: cfg.public.Methods, Tools: cfg.public.Tools, Prompts: cfg.public.Prompts, Resources: cfg.public.Resources,
			},
		},
		DPoP:           dp,
		Validation:     proxy.Validation{TenantClaim: "tenant"},
		Policy:         policy,
		ForwardHeaders: cfg.forwardHeaders,
		Lists:          cfg.proxyLists,
		RateLimit:      cfg.rateLimit,
	}}})
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { px.Close() })
	ts.Config.Handler = px
	if cfg.wrapProxy != nil {
		ts.Config.Handler = cfg.wrapProxy(px)
	}
	ts.Start()
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatalf("proxy keys: %v", err)
	}
	return px
}

// TestProxyGoSDK: the official Go SDK client, through mcpguard proxy in
// front of the example server (which trusts only the proxy's assertions),
// runs the whole flow of both revisions: 401, metadata (the proxy's),
// registration (CIMD and DCR), token, whoami, the 403 step-up answered by
// the proxy and the retried call.
func TestProxyGoSDK(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{viaProxy: true})
	for _, rev := range revisions {
		for _, reg := range []registration{viaCIMD, viaDCR} {
			t.Run(rev+"/"+reg.String(), func(t *testing.T) {
				ctx := testContext(t)
				tenant := "tenant-p" + rev[:4] + reg.String()
				hint := "proxied@" + tenant
				cs, rec := e.connect(ctx, t, sdkClient{reg: reg, revision: rev, loginHint: hint})
				var who server.WhoamiResult
				callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &who)
				// The example sees the proxy's assertion, with the subject,
				// client and tenant of the client's token.
				if who.Subject != "proxied" || who.Tenant != tenant || who.ClientID == "" {
					t.Errorf("whoami through the proxy = %+v", who)
				}
				var wrote server.NotesWriteResult
				callJSON(ctx, t, cs, server.ToolNotesWrite, map[string]any{"text": "via proxy"}, &wrote)
				if wrote.Tenant != tenant || wrote.Note.Text != "via proxy" {
					t.Errorf("notes_write = %+v", wrote)
				}
				forbidden := rec.withStatus(403)
				if len(forbidden) != 1 || !slices.Equal(forbidden[0].wwwAuth, []string{e.insufficientScope(baseScope, server.ScopeNotesWrite)}) {
					t.Errorf("403 answers = %+v, want one step-up challenge %q", forbidden, e.insufficientScope(baseScope, server.ScopeNotesWrite))
				}
			})
		}
	}
}

// TestProxyTypeScriptClients: the TypeScript SDK v1 and v2 clients run
// their whole flow through the proxy in front of the example server, as
// TestTypeScriptClients does against it directly.
func TestProxyTypeScriptClients(t *testing.T) {
	node := requireNode(t)
	t.Parallel()
	e := newEnv(t, envConfig{viaProxy: true})
	for _, c := range tsClients {
		t.Run(c.sdk+"/"+c.revision, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
			defer cancel()
			r := runDriver(ctx, t, node, "--sdk", c.sdk, "--revision", c.revision, "--url", e.mcpURL)
			checkFlow(t, r, flowWant{mcpURL: e.mcpURL, issuer: e.issuer, registration: "dcr", revision: c.revision, subject: "dev-user"})
		})
	}
}
