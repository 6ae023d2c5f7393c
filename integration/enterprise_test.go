package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/devas/devidp"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
)

// Fixtures of the enterprise flows.
const (
	xaaClientID     = "integration-xaa"
	xaaSecret       = "integration-xaa-secret"
	workloadSubject = "agent-7"
)

// enterpriseEnv is a development IdP (devidp), a second IdP the
// authorization server does not trust, one whose clock is an hour late
// (its ID-JAGs are expired on arrival), devas trusting the first and the
// late one, and the example MCP server trusting devas; all on 127.0.0.1.
type enterpriseEnv struct {
	idp, untrusted, late *devidp.IdP
	issuer, mcpURL       string
}

func newEnterpriseEnv(t *testing.T) *enterpriseEnv {
	t.Helper()
	e := &enterpriseEnv{}
	startIdP := func(now func() time.Time) *devidp.IdP {
		ts := httptest.NewUnstartedServer(nil)
		idp, err := devidp.New(devidp.Config{Issuer: "http://" + ts.Listener.Addr().String(), Now: now,
			Clients: []devidp.Client{{ID: xaaClientID + "-at-idp", Secret: "idp-secret", ResourceClientID: xaaClientID}}})
		if err != nil {
			t.Fatalf("devidp.New: %v", err)
		}
		ts.Config.Handler = idp
		ts.Start()
		t.Cleanup(ts.Close)
		return idp
	}
	e.idp, e.untrusted = startIdP(nil), startIdP(nil)
	e.late = startIdP(func() time.Time { return time.Now().Add(-time.Hour) })

	asTS := httptest.NewUnstartedServer(nil)
	mcpTS := httptest.NewUnstartedServer(nil)
	e.issuer = "http://" + asTS.Listener.Addr().String()
	e.mcpURL = "http://" + mcpTS.Listener.Addr().String() + "/mcp"
	xaa := cimd.Client{Document: cimd.Document{ClientID: xaaClientID, ClientName: "integration XAA client",
		GrantTypes: []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"}, TokenEndpointAuthMethod: "client_secret_basic"}}
	xaa.SetSecret(xaaSecret)
	as, err := devas.New(devas.Config{
		Issuer:    e.issuer,
		Resources: []string{e.mcpURL, e.mcpURL + "-other"},
		Scopes:    []string{baseScope, server.ScopeNotesRead},
		Clients:   []cimd.Client{xaa},
		TrustedIdPs: []devas.TrustedIssuer{
			{Issuer: e.idp.Issuer(), Keys: e.idp.PublicKeys()},
			{Issuer: e.late.Issuer(), Keys: e.late.PublicKeys()},
		},
		TrustedWorkloads: []devas.TrustedIssuer{{Issuer: e.idp.Issuer(), Keys: e.idp.PublicKeys(), Subjects: []string{"agent-*"}, Tenant: "tenant-w"}},
	})
	if err != nil {
		t.Fatalf("devas.New: %v", err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: e.issuer, Keys: &validate.StaticKeys{Set: as.PublicKeys()}}},
		Audiences:   []string{e.mcpURL},
		TenantClaim: "tenant",
	})
	if err != nil {
		t.Fatalf("validate.New: %v", err)
	}
	srv, err := server.New(server.Config{Resource: e.mcpURL, AuthorizationServers: []string{e.issuer}, Validator: v, Scopes: []string{baseScope}})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	mcpTS.Config.Handler = srv
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)
	return e
}

// idjag returns mcpguard's ID-JAG Authorizer for the user's ID token from
// idp.
func (e *enterpriseEnv) idjag(t *testing.T, idp *devidp.IdP) *client.IDJAG {
	t.Helper()
	idToken, err := idp.IDToken("alice", xaaClientID+"-at-idp")
	if err != nil {
		t.Fatal(err)
	}
	a, err := client.NewIDJAG(client.IDJAGConfig{
		Client: client.ClientCredentialsConfig{ClientID: xaaClientID, ClientSecret: xaaSecret, Issuer: e.issuer,
			DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})},
		IdPTokenURL: idp.Issuer() + "/token", IdPClientID: xaaClientID + "-at-idp", IdPClientSecret: "idp-secret",
		IdentityAssertion: func(context.Context) (string, error) { return idToken, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// whoami connects with the go-sdk client over mcpguard's client transport
// with a, calls whoami and returns its result.
func (e *enterpriseEnv) whoami(t *testing.T, a client.Authorizer) (server.WhoamiResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tr, err := client.New(client.Config{Resource: e.mcpURL, Authorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "enterprise-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.mcpURL, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		return server.WhoamiResult{}, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.ToolWhoami, Arguments: map[string]any{}})
	if err != nil {
		return server.WhoamiResult{}, err
	}
	var who server.WhoamiResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &who); err != nil {
		t.Fatalf("whoami result: %v", err)
	}
	return who, nil
}

// TestEnterpriseIDJAG: mcpguard's client exchanges the user's ID token at
// the development IdP for an ID-JAG, redeems it at devas with the JWT
// bearer grant, and calls the example server as the user.
func TestEnterpriseIDJAG(t *testing.T) {
	e := newEnterpriseEnv(t)
	who, err := e.whoami(t, e.idjag(t, e.idp))
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if who.Subject != "alice" || who.ClientID != xaaClientID || strings.Join(who.Scopes, " ") != baseScope {
		t.Errorf("whoami: got %+v, want subject alice, client %s, scopes %s", who, xaaClientID, baseScope)
	}
}

// TestEnterpriseWorkloadIdentity: mcpguard's client presents a workload
// JWT read from a file with the JWT bearer grant and calls the example
// server as the workload; a workload the subject rules do not name is
// refused.
func TestEnterpriseWorkloadIdentity(t *testing.T) {
	e := newEnterpriseEnv(t)
	for _, tt := range []struct {
		name, subject string
		wantCode      string
	}{
		{"allowed", workloadSubject, ""},
		{"subject not allowed", "intruder", "invalid_grant"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			jwt, err := e.idp.WorkloadJWT(tt.subject, e.issuer+"/token", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(file, []byte(jwt+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := client.NewWorkloadIdentity(client.WorkloadIdentityConfig{TokenFile: file, Issuer: e.issuer,
				DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})})
			if err != nil {
				t.Fatal(err)
			}
			who, err := e.whoami(t, w)
			if tt.wantCode != "" {
				var re *oauth2.RetrieveError
				if !errors.As(err, &re) || re.ErrorCode != tt.wantCode || re.Response.StatusCode != http.StatusBadRequest {
					t.Fatalf("got %v, want a 400 %s token error", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("whoami: %v", err)
			}
			if who.Subject != workloadSubject || who.ClientID != workloadSubject || who.Tenant != "tenant-w" {
				t.Errorf("whoami: got %+v, want subject and client %s, tenant tenant-w", who, workloadSubject)
			}
		})
	}
}

// TestEnterpriseIDJAGRefused: devas refuses a replayed ID-JAG, one for
// another resource, one from an untrusted IdP and an expired one, each
// with 400 invalid_grant (docs/testing.md); mcpguard's client surfaces the
// refusal of the untrusted and expired ones without retrying.
func TestEnterpriseIDJAGRefused(t *testing.T) {
	e := newEnterpriseEnv(t)
	// exchange obtains an ID-JAG from idp as mcpguard's client does.
	exchange := func(t *testing.T, idp *devidp.IdP, resource string) string {
		t.Helper()
		idToken, err := idp.IDToken("alice", xaaClientID+"-at-idp")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := client.ExchangeToken(context.Background(), nil, client.ExchangeConfig{
			TokenURL: idp.Issuer() + "/token", ClientID: xaaClientID + "-at-idp", ClientSecret: "idp-secret",
			Audience: []string{e.issuer}, Resource: []string{resource},
			RequestedTokenType: "urn:ietf:params:oauth:token-type:id-jag", SubjectTokenType: "urn:ietf:params:oauth:token-type:id_token",
		}, idToken)
		if err != nil {
			t.Fatalf("token exchange: %v", err)
		}
		return tok.AccessToken
	}
	// redeem presents jag at devas with the JWT bearer grant.
	redeem := func(t *testing.T, jag, resource string) (int, string) {
		t.Helper()
		form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jag}}
		if resource != "" {
			form.Set("resource", resource)
		}
		req, _ := http.NewRequest(http.MethodPost, e.issuer+"/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(xaaClientID, xaaSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error
	}

	jag := exchange(t, e.idp, e.mcpURL)
	tests := []struct {
		name       string
		jag        string
		resource   string
		wantStatus int
		wantError  string
	}{
		{"first use", jag, e.mcpURL, 200, ""},
		{"replayed", jag, e.mcpURL, 400, "invalid_grant"},
		{"another resource", exchange(t, e.idp, "https://elsewhere.example/mcp"), "", 400, "invalid_grant"},
		{"untrusted IdP", exchange(t, e.untrusted, e.mcpURL), e.mcpURL, 400, "invalid_grant"},
		{"expired", exchange(t, e.late, e.mcpURL), e.mcpURL, 400, "invalid_grant"},
		{"request for another resource than the ID-JAG's", exchange(t, e.idp, e.mcpURL), e.mcpURL + "-other", 400, "invalid_target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, code := redeem(t, tt.jag, tt.resource)
			if status != tt.wantStatus || code != tt.wantError {
				t.Errorf("got %d %q, want %d %q", status, code, tt.wantStatus, tt.wantError)
			}
		})
	}

	for _, tt := range []struct {
		name string
		idp  *devidp.IdP
	}{{"untrusted IdP through the client", e.untrusted}, {"expired through the client", e.late}} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.whoami(t, e.idjag(t, tt.idp))
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.Response.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400 invalid_grant token error", err)
			}
		})
	}
}
