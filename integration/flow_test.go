package integration

import (
	"reflect"
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// TestDiscoveryToWhoami runs the whole MCP authorization with the official
// Go SDK client, for a client registering with a Client ID Metadata
// Document and one registering dynamically (RFC 7591), in both MCP
// revisions: 401 → protected-resource metadata → authorization server
// metadata → registration → authorization code with PKCE and resource →
// token → whoami.
func TestDiscoveryToWhoami(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	for _, reg := range []registration{viaCIMD, viaDCR} {
		for _, rev := range revisions {
			t.Run(reg.String()+"/"+rev, func(t *testing.T) {
				ctx := testContext(t)
				before := e.authorizations()
				cs, rec := e.connect(ctx, t, sdkClient{reg: reg, revision: rev})

				var got server.WhoamiResult
				callJSON(ctx, t, cs, server.ToolWhoami, map[string]any{}, &got)
				want := server.WhoamiResult{
					Subject:  "dev-user",
					Tenant:   "tenant-a",
					ClientID: got.ClientID, // checked below
					Scopes:   []string{baseScope},
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("whoami = %+v, want %+v", got, want)
				}
				switch reg {
				case viaCIMD:
					if got.ClientID != e.cimdURL {
						t.Errorf("client_id = %q, want the CIMD URL %q", got.ClientID, e.cimdURL)
					}
				case viaDCR:
					if len(got.ClientID) < 5 || got.ClientID[:4] != "dcr_" {
						t.Errorf("client_id = %q, want a dynamically registered id (dcr_…)", got.ClientID)
					}
				}
				if n := e.authorizations() - before; n != 1 {
					t.Errorf("authorization requests = %d, want 1", n)
				}

				// The first request went out without a token and got the
				// exact 401 of spec-auth.md §5.1; everything after carried
				// the token.
				ex := rec.exchanges()
				if len(ex) < 2 {
					t.Fatalf("recorded %d exchanges, want at least 2", len(ex))
				}
				first := ex[0]
				if first.hadToken || first.status != 401 || !slices.Equal(first.wwwAuth, []string{noToken(e.metaURL)}) {
					t.Errorf("first exchange = %+v, want 401 without token and challenge %q", first, noToken(e.metaURL))
				}
				wantFirst := "initialize"
				if rev == rev20260728 {
					wantFirst = "server/discover"
				}
				if rev == rev20260728 && first.mcpMethod != wantFirst {
					t.Errorf("first request Mcp-Method = %q, want %q", first.mcpMethod, wantFirst)
				}
				for i, x := range ex[1:] {
					if !x.hadToken || x.status >= 400 {
						t.Errorf("exchange %d = %+v, want a token and success", i+1, x)
					}
					if rev == rev20260728 && x.version != rev20260728 {
						t.Errorf("exchange %d MCP-Protocol-Version = %q, want %q", i+1, x.version, rev)
					}
				}
			})
		}
	}
}
