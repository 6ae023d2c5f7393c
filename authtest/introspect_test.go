package authtest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// introspect posts token to the issuer with the given Basic credentials
// (none if id is empty) and returns the status and decoded body.
func introspect(t *testing.T, iss *authtest.Issuer, id, secret, token string) (int, map[string]any) {
	t.Helper()
	form := url.Values{}
	if token != "" {
		form.Set("token", token)
	}
	req, err := http.NewRequest(http.MethodPost, iss.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	resp, err := iss.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	id, secret := iss.IntrospectionClientID, iss.IntrospectionSecret
	if id != "rs-client" || secret != "rs-secret" {
		t.Fatalf("IntrospectionCredentials() = %q, %q; want the defaults", id, secret)
	}
	valid := iss.Token(t, authtest.Token{Subject: "alice"})
	expired := iss.Token(t, authtest.Expired())
	future := iss.Token(t, authtest.Token{NotBefore: time.Hour, Lifetime: 2 * time.Hour})
	opaque := iss.Token(t, authtest.Token{Opaque: true, Scopes: []string{"a", "b"}, KID: "ignored"})
	if strings.Count(opaque, ".") != 0 {
		t.Errorf("opaque token %q looks like a JWT", opaque)
	}

	tests := []struct {
		name       string
		mode       authtest.Fault
		token      string
		wantStatus int
		wantActive bool
		wantClaim  [2]string // name, value; empty => not checked
	}{
		{"active jwt", authtest.Fault(""), valid, 200, true, [2]string{"sub", "alice"}},
		{"active opaque", authtest.Fault(""), opaque, 200, true, [2]string{"scope", "a b"}},
		{"expired", authtest.Fault(""), expired, 200, false, [2]string{}},
		{"not yet valid", authtest.Fault(""), future, 200, false, [2]string{}},
		{"unknown", authtest.Fault(""), "nope", 200, false, [2]string{}},
		{"inactive", authtest.Fault("inactive"), valid, 200, false, [2]string{}},
		{"error", authtest.Fault("server-error"), valid, 500, false, [2]string{}},
		{"lax expired", authtest.Fault("always-active"), expired, 200, true, [2]string{"iss", iss.URL}},
		{"lax unknown", authtest.Fault("always-active"), "nope", 200, true, [2]string{}},
	}
	for _, tt := range tests {
		// Not parallel: the mode is issuer-wide.
		t.Run(tt.name, func(t *testing.T) {
			iss.SetFault(tt.mode, iss.IntrospectionURL)
			status, m := introspect(t, iss, id, secret, tt.token)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d", status, tt.wantStatus)
			}
			if status != http.StatusOK {
				return
			}
			if m["active"] != tt.wantActive {
				t.Errorf("active = %v, want %v", m["active"], tt.wantActive)
			}
			if !tt.wantActive && len(m) != 1 {
				t.Errorf("inactive response has extra members: %v", m)
			}
			if tt.wantClaim[0] != "" && m[tt.wantClaim[0]] != tt.wantClaim[1] {
				t.Errorf("%s = %v, want %q", tt.wantClaim[0], m[tt.wantClaim[0]], tt.wantClaim[1])
			}
		})
	}

	iss.SetFault("", iss.IntrospectionURL)
	iss.Advance(2 * time.Hour)
	if _, m := introspect(t, iss, id, secret, valid); m["active"] != false {
		t.Errorf("after Advance(2h): active = %v, want false", m["active"])
	}
	if _, m := introspect(t, iss, id, secret, future); m["active"] != false {
		t.Errorf("at exp of the not-yet-valid token: active = %v, want false", m["active"])
	}
}

func TestIntrospectionRequests(t *testing.T) {
	t.Parallel()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{
		IntrospectionClientID: "me", IntrospectionSecret: "pw", TLS: true,
	})
	tok := iss.Token(t, authtest.Token{})
	tests := []struct {
		name       string
		id, secret string
		token      string
		wantStatus int
	}{
		{"ok", "me", "pw", tok, 200},
		{"no credentials", "", "", tok, 401},
		{"wrong secret", "me", "nope", tok, 401},
		{"wrong client", "rs-client", "rs-secret", tok, 401},
		{"no token", "me", "pw", "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m := introspect(t, iss, tt.id, tt.secret, tt.token)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			if status == http.StatusUnauthorized && m["error"] != "invalid_client" {
				t.Errorf("401 body = %v, want error invalid_client", m)
			}
		})
	}
	resp, err := iss.Client.Get(iss.IntrospectionURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	if got, want := iss.Requests(iss.IntrospectionURL), int64(len(tests)+1); got != want {
		t.Errorf("IntrospectionCalls() = %d, want %d", got, want)
	}
}
