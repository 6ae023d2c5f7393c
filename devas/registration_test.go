package devas_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/devas"
)

// TestRegisteredScopeIsNoCeiling: a client that registers (RFC 7591) or
// publishes a metadata document with only the first challenge's scope,
// as the TypeScript SDK, MCP Inspector and mcp-go do, can step up to a
// scope it did not register; a pre-registered client stays bounded by
// the scope its operator gave it.
func TestRegisteredScopeIsNoCeiling(t *testing.T) {
	h := newCIMDHost(t)
	cimdID := h.add("/narrow.json", func(d map[string]any) { d["scope"] = "tools:read" })
	e := cimdEnv(t, h, func(c *devas.Config) {
		c.EnableDCR = true
		static := publicClient()
		static.ClientID = "static-narrow"
		static.Scope = "tools:read"
		c.Clients = append(c.Clients, static)
	})
	status, _, out := e.register(map[string]any{
		"redirect_uris": []string{redirectURI}, "client_name": "first-challenge client",
		"token_endpoint_auth_method": "none", "scope": "tools:read",
	})
	dcrID, _ := out["client_id"].(string)
	if status != http.StatusCreated || dcrID == "" {
		t.Fatalf("register: %d %v", status, out)
	}
	for _, tt := range []struct {
		name, clientID, scope string
		wantScope, wantError  string
	}{
		{name: "dcr first challenge", clientID: dcrID, scope: "tools:read", wantScope: "tools:read"},
		{name: "dcr step-up", clientID: dcrID, scope: "tools:read tools:write", wantScope: "tools:read tools:write"},
		{name: "dcr unsupported scope", clientID: dcrID, scope: "tools:read admin", wantError: "invalid_scope"},
		{name: "cimd step-up", clientID: cimdID, scope: "tools:read tools:write", wantScope: "tools:read tools:write"},
		{name: "static within registration", clientID: "static-narrow", scope: "tools:read", wantScope: "tools:read"},
		{name: "static beyond registration", clientID: "static-narrow", scope: "tools:read tools:write", wantError: "invalid_scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := authParams()
			q.Set("client_id", tt.clientID)
			q.Set("scope", tt.scope)
			resp, _ := e.authorize(q)
			got := e.redirected(resp, redirectURI)
			if tt.wantError != "" {
				if got.Get("error") != tt.wantError || got.Get("code") != "" {
					t.Fatalf("redirect = %v, want error %s", got, tt.wantError)
				}
				return
			}
			if got.Get("code") == "" {
				t.Fatalf("authorize: %s: %s, want a code", got.Get("error"), got.Get("error_description"))
			}
			f := codeForm(got.Get("code"))
			f.Set("client_id", tt.clientID)
			tr := e.token(f, nil)
			if tr.Status != http.StatusOK || tr.Scope != tt.wantScope {
				t.Fatalf("token: %d %q scope %q, want %q", tr.Status, tr.Error, tr.Scope, tt.wantScope)
			}
			if c, _ := e.decode(tr.AccessToken); c.Scope != tt.wantScope || c.ClientID != tt.clientID {
				t.Errorf("claims scope %q client_id %q", c.Scope, c.ClientID)
			}
		})
	}
}

// TestRegistrationBounds: the built-in registration store keeps at most
// MaxRegistrations clients (a full store forgets the oldest) and each for
// RegistrationTTL; an issued secret expires with its registration.
func TestRegistrationBounds(t *testing.T) {
	const ttl = time.Hour
	e := start(t, func(c *devas.Config) {
		c.EnableDCR = true
		c.MaxRegistrations = 3
		c.RegistrationTTL = ttl
	})
	register := func(method string) (string, map[string]any) {
		t.Helper()
		status, _, out := e.register(map[string]any{
			"redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": method,
		})
		id, _ := out["client_id"].(string)
		if status != http.StatusCreated || id == "" {
			t.Fatalf("register: %d %v", status, out)
		}
		return id, out
	}
	// known reports whether an authorization request for id gets a code
	// (a known client) or the 400 error page (invalid_client).
	known := func(id string) bool {
		t.Helper()
		q := authParams()
		q.Set("client_id", id)
		resp, body := e.authorize(q)
		switch resp.StatusCode {
		case http.StatusFound:
			return true
		case http.StatusBadRequest:
			return false
		}
		t.Fatalf("authorize %s: %d %s", id, resp.StatusCode, body)
		return false
	}

	first, out := register("client_secret_basic")
	if exp, _ := out["client_secret_expires_at"].(float64); int64(exp) != e.clock.Now().Add(ttl).Unix() {
		t.Errorf("client_secret_expires_at = %v, want issued + RegistrationTTL (%d)", out["client_secret_expires_at"], e.clock.Now().Add(ttl).Unix())
	}
	e.clock.Advance(time.Minute)
	second, _ := register("none")
	third, _ := register("none")
	for _, id := range []string{first, second, third} {
		if !known(id) {
			t.Fatalf("client %s unknown below the cap", id)
		}
	}
	fourth, _ := register("none") // the store is full: the oldest goes
	if known(first) {
		t.Errorf("oldest registration kept beyond MaxRegistrations")
	}
	for _, id := range []string{second, third, fourth} {
		if !known(id) {
			t.Errorf("client %s forgotten; only the oldest should be", id)
		}
	}

	e.clock.Advance(ttl) // second and third registered ttl ago: expired
	for _, id := range []string{second, third, fourth} {
		if known(id) {
			t.Errorf("client %s known after RegistrationTTL", id)
		}
	}
	if _, err := devas.New(devas.Config{Issuer: e.issuer, Resources: []string{resource}, EnableDCR: true, MaxRegistrations: -1}); err == nil {
		t.Errorf("negative MaxRegistrations accepted")
	}
}
