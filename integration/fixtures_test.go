package integration

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// TestFixtureTokens runs the example server against an authtest issuer
// (keys fetched through discovery and a remote JWKS, clock pinned to the
// issuer's) and sends tokens that break one property each. Every one gets
// exactly the 401 invalid_token challenge over real HTTP, in both
// revisions; the tool never runs.
func TestFixtureTokens(t *testing.T) {
	t.Parallel()
	mcpTS := httptest.NewUnstartedServer(nil)
	mcpURL := "http://" + mcpTS.Listener.Addr().String() + "/mcp"
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: mcpURL})
	keys, err := jwks.New(jwks.Config{Issuer: iss.URL, HTTPClient: iss.Client, Now: iss.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: keys}},
		Audiences:   []string{mcpURL},
		TenantClaim: "tenant",
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Resource:             mcpURL,
		AuthorizationServers: []string{iss.URL},
		Validator:            v,
		Scopes:               []string{baseScope},
		Now:                  iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	mcpTS.Config.Handler = srv
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)
	metaURL := srv.ResourceMetadataURL()

	tests := []struct {
		name      string
		token     string
		wantAuth  string
		wantBody  string
		wantState int
	}{
		{name: "valid", token: iss.Token(t, authtest.Token{}), wantState: http.StatusOK},
		{name: "no token", token: "", wantState: http.StatusUnauthorized, wantAuth: noToken(metaURL), wantBody: `{"error":"unauthorized"}`},
		{name: "expired", token: iss.Token(t, authtest.Expired())},
		{name: "not yet valid", token: iss.Token(t, authtest.Token{NotBefore: time.Hour, Lifetime: 2 * time.Hour})},
		{name: "wrong audience", token: iss.Token(t, authtest.WrongAudience())},
		{name: "wrong issuer", token: iss.Token(t, authtest.WrongIssuer())},
		{name: "unknown key", token: iss.Token(t, authtest.Token{ForeignKey: true, KID: "unknown-kid"})},
		{name: "wrong key under a known kid", token: iss.Token(t, authtest.Token{ForeignKey: true})},
		{name: "unsigned", token: iss.Token(t, authtest.AlgNone())},
		{name: "untyped (not at+jwt)", token: iss.Token(t, authtest.Token{Typ: "JWT"})},
		{name: "garbage", token: "not.a.jwt"},
	}
	for _, rev := range revisions {
		for _, tt := range tests {
			t.Run(rev+"/"+tt.name, func(t *testing.T) {
				ctx := testContext(t)
				wantStatus, wantAuth, wantBody := tt.wantState, tt.wantAuth, tt.wantBody
				if wantStatus == 0 {
					wantStatus, wantAuth, wantBody = http.StatusUnauthorized, invalidToken(metaURL), `{"error":"invalid_token"}`
				}
				r := rawPost(ctx, t, mcpURL, rawRequest{token: tt.token, revision: rev, method: "tools/call", params: toolCall(server.ToolWhoami, nil)})
				if r.status != wantStatus {
					t.Fatalf("status = %d, want %d (body %s)", r.status, wantStatus, r.body)
				}
				if wantStatus == http.StatusOK {
					if tr := r.tool(t); tr.IsError || len(r.wwwAuth) != 0 {
						t.Errorf("valid token: %s, WWW-Authenticate %q", r.body, r.wwwAuth)
					}
					return
				}
				if !slices.Equal(r.wwwAuth, []string{wantAuth}) {
					t.Errorf("WWW-Authenticate = %q,\nwant %q", r.wwwAuth, wantAuth)
				}
				if string(r.body) != wantBody {
					t.Errorf("body = %s, want %s", r.body, wantBody)
				}
			})
		}
	}
}
