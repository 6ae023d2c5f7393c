package devas_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}, "resource": {resource}}
}

// TestRefreshRotation: each use rotates; a spent token revokes the family.
func TestRefreshRotation(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.RefreshTokens = true })
	q := authParams()
	q.Set("scope", "tools:read tools:write offline_access")
	tr := e.token(codeForm(e.code(q)), nil)
	if tr.RefreshToken == "" || tr.Scope != "tools:read tools:write offline_access" {
		t.Fatalf("first token: refresh %q scope %q", tr.RefreshToken, tr.Scope)
	}
	rt1 := tr.RefreshToken

	tr2 := e.token(refreshForm(rt1), nil)
	if tr2.Status != http.StatusOK || tr2.RefreshToken == "" || tr2.RefreshToken == rt1 || tr2.AccessToken == "" {
		t.Fatalf("refresh: %d %q, new token %q", tr2.Status, tr2.Error, tr2.RefreshToken)
	}
	if c, _ := e.decode(tr2.AccessToken); c.Scope != "tools:read tools:write offline_access" || c.Audience != resource {
		t.Errorf("refreshed claims = %+v", c)
	}

	// Narrowing is allowed; widening is not.
	f := refreshForm(tr2.RefreshToken)
	f.Set("scope", "admin")
	if got := e.token(f, nil); got.Error != "invalid_scope" {
		t.Errorf("widening scope: %q, want invalid_scope", got.Error)
	}
	f.Set("scope", "tools:read")
	tr3 := e.token(f, nil)
	if tr3.Status != http.StatusOK || tr3.Scope != "tools:read" {
		t.Fatalf("narrowing: %d %q scope %q", tr3.Status, tr3.Error, tr3.Scope)
	}
	// The rotated refresh token keeps the full grant.
	tr4 := e.token(refreshForm(tr3.RefreshToken), nil)
	if tr4.Scope != "tools:read tools:write offline_access" {
		t.Errorf("after narrowing, refresh scope = %q", tr4.Scope)
	}

	// Reuse of rt1 (spent) revokes the family, including tr4's token.
	if got := e.token(refreshForm(rt1), nil); got.Error != "invalid_grant" {
		t.Errorf("reuse: %q, want invalid_grant", got.Error)
	}
	if got := e.token(refreshForm(tr4.RefreshToken), nil); got.Error != "invalid_grant" {
		t.Errorf("after reuse, latest token: %q, want invalid_grant (family revoked)", got.Error)
	}
}

// TestRefreshErrors covers the other refresh_token failures.
func TestRefreshErrors(t *testing.T) {
	other := publicClient()
	other.ClientID = "other-client"
	e := start(t, func(c *devas.Config) {
		c.RefreshTokens = true
		c.Clients = append(c.Clients, other)
		c.Resources = append(c.Resources, "http://127.0.0.1:8080/second")
	})
	tests := []struct {
		name      string
		mod       func(url.Values)
		wantError string
	}{
		{name: "other client", mod: func(f url.Values) { f.Set("client_id", "other-client") }, wantError: "invalid_grant"},
		{name: "other resource", mod: func(f url.Values) { f.Set("resource", "http://127.0.0.1:8080/second") }, wantError: "invalid_target"},
		{name: "unknown token", mod: func(f url.Values) { f.Set("refresh_token", "nope") }, wantError: "invalid_grant"},
		{name: "missing token", mod: func(f url.Values) { f.Del("refresh_token") }, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := e.token(codeForm(e.code(authParams())), nil).RefreshToken
			f := refreshForm(rt)
			tt.mod(f)
			if got := e.token(f, nil); got.Error != tt.wantError {
				t.Errorf("got %q, want %q", got.Error, tt.wantError)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		rt := e.token(codeForm(e.code(authParams())), nil).RefreshToken
		e.clock.Advance(24 * time.Hour)
		if got := e.token(refreshForm(rt), nil); got.Error != "invalid_grant" {
			t.Errorf("got %q, want invalid_grant", got.Error)
		}
	})
	t.Run("another client does not spend it", func(t *testing.T) {
		rt := e.token(codeForm(e.code(authParams())), nil).RefreshToken
		f := refreshForm(rt)
		f.Set("client_id", "other-client")
		e.token(f, nil)
		if got := e.token(refreshForm(rt), nil); got.Status != http.StatusOK {
			t.Errorf("owner after foreign attempt: %q", got.Error)
		}
	})
}

// TestCodeReuseRevokesRefresh: presenting a spent code revokes the refresh
// tokens issued from it (RFC 6749 §4.1.2).
func TestCodeReuseRevokesRefresh(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.RefreshTokens = true })
	f := codeForm(e.code(authParams()))
	rt := e.token(f, nil).RefreshToken
	if got := e.token(f, nil); got.Error != "invalid_grant" {
		t.Fatalf("code reuse: %q", got.Error)
	}
	if got := e.token(refreshForm(rt), nil); got.Error != "invalid_grant" {
		t.Errorf("refresh after code reuse: %q, want invalid_grant", got.Error)
	}
}

// TestNoRefreshWithoutClientGrant: a client without the refresh_token
// grant gets no refresh token, and offline_access is dropped.
func TestNoRefreshWithoutClientGrant(t *testing.T) {
	c := publicClient()
	c.GrantTypes = []string{"authorization_code"}
	e := start(t, func(cfg *devas.Config) { cfg.RefreshTokens = true; cfg.Clients = []cimd.Client{c} })
	q := authParams()
	q.Set("scope", "tools:read offline_access")
	tr := e.token(codeForm(e.code(q)), nil)
	if tr.RefreshToken != "" || tr.Scope != "tools:read" {
		t.Errorf("refresh %q scope %q, want none and tools:read", tr.RefreshToken, tr.Scope)
	}
	if got := e.token(refreshForm("x"), nil); got.Error != "unauthorized_client" {
		t.Errorf("refresh grant: %q, want unauthorized_client", got.Error)
	}
}

// TestGrantScopes: GrantScopes can refuse scopes (partial grant) or all
// of them (access_denied).
func TestGrantScopes(t *testing.T) {
	var calls [][]string
	e := start(t, func(c *devas.Config) {
		c.GrantScopes = func(client, subject string, requested []string) []string {
			calls = append(calls, []string{client, subject})
			return slices.DeleteFunc(requested, func(s string) bool { return s == "tools:write" })
		}
	})
	tests := []struct {
		name, scope, wantScope, wantError string
	}{
		{name: "partial", scope: "tools:read tools:write", wantScope: "tools:read"},
		{name: "all refused", scope: "tools:write", wantError: "access_denied"},
		{name: "nothing requested", scope: "", wantScope: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authParams()
			q.Set("scope", tt.scope)
			resp, _ := e.authorize(q)
			got := e.redirected(resp, redirectURI)
			if got.Get("error") != tt.wantError {
				t.Fatalf("error = %q, want %q", got.Get("error"), tt.wantError)
			}
			if tt.wantError != "" {
				return
			}
			tr := e.token(codeForm(got.Get("code")), nil)
			c, _ := e.decode(tr.AccessToken)
			if tr.Scope != tt.wantScope || c.Scope != tt.wantScope {
				t.Errorf("scope: response %q, token %q; want %q", tr.Scope, c.Scope, tt.wantScope)
			}
		})
	}
	if len(calls) == 0 || calls[0][0] != clientID || calls[0][1] != "dev-user" {
		t.Errorf("GrantScopes calls = %v", calls)
	}
}

// TestLoginHint: with AllowLoginHint, login_hint=subject@tenant picks the
// user; without it, login_hint is ignored.
func TestLoginHint(t *testing.T) {
	tests := []struct {
		name                string
		allow               bool
		hint                string
		wantSub, wantTenant string
		wantError           string
	}{
		{name: "subject and tenant", allow: true, hint: "alice@tenant-b", wantSub: "alice", wantTenant: "tenant-b"},
		{name: "subject only", allow: true, hint: "bob", wantSub: "bob", wantTenant: "tenant-a"},
		{name: "no hint", allow: true, wantSub: "dev-user", wantTenant: "tenant-a"},
		{name: "malformed", allow: true, hint: "a@b@c", wantError: "invalid_request"},
		{name: "bad characters", allow: true, hint: "<x>@t", wantError: "invalid_request"},
		{name: "ignored when not allowed", allow: false, hint: "alice@tenant-b", wantSub: "dev-user", wantTenant: "tenant-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, func(c *devas.Config) { c.AllowLoginHint = tt.allow })
			q := authParams()
			if tt.hint != "" {
				q.Set("login_hint", tt.hint)
			}
			resp, _ := e.authorize(q)
			got := e.redirected(resp, redirectURI)
			if got.Get("error") != tt.wantError {
				t.Fatalf("error = %q, want %q", got.Get("error"), tt.wantError)
			}
			if tt.wantError != "" {
				return
			}
			c, _ := e.decode(e.token(codeForm(got.Get("code")), nil).AccessToken)
			if c.Subject != tt.wantSub || c.Tenant != tt.wantTenant {
				t.Errorf("sub/tenant = %s/%s, want %s/%s", c.Subject, c.Tenant, tt.wantSub, tt.wantTenant)
			}
		})
	}
}

// TestConfiguredIdentity: Subject and Tenant replace the defaults.
func TestConfiguredIdentity(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.Subject = "carol"; c.Tenant = "tenant-z" })
	c, _ := e.decode(e.token(codeForm(e.code(authParams())), nil).AccessToken)
	if c.Subject != "carol" || c.Tenant != "tenant-z" {
		t.Errorf("sub/tenant = %s/%s", c.Subject, c.Tenant)
	}
}
