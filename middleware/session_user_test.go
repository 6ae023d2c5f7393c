package middleware

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// otherIssuer is a second issuer the validator of newUserEnv trusts, with
// the same keys as the fixture's.
const otherIssuer = "https://as2.example"

// newUserEnv is newSessionEnv with a validator that trusts two issuers.
func newUserEnv(t *testing.T, mutate func(*Config)) *sessionEnv {
	t.Helper()
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	keys := &validate.StaticKeys{Set: iss.Keys()}
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: iss.URL, Keys: keys}, {Issuer: otherIssuer, Keys: keys}},
		Audiences:   []string{resource},
		TenantClaim: "tenant",
		Now:         iss.Now,
		CacheSize:   -1,
	})
	if err != nil {
		t.Fatalf("validate.New: %s", err.Error())
	}
	cfg := testConfig(v, iss)
	cfg.Operations.Public.Methods = []string{"initialize", "ping"}
	if mutate != nil {
		mutate(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %s", err.Error())
	}
	srv := newFakeSessions()
	return &sessionEnv{f: &fixture{iss: iss, v: v, m: m, cfg: cfg}, srv: srv, h: m.Handler(srv)}
}

// TestSessionBoundToUser: a session is its user's (issuer, subject,
// tenant), whatever the client: alice through another client_id (a client
// that registered anew at step-up) is served in it; bob, alice at another
// issuer and alice at another tenant get 404. A client acting for itself
// (sub == client_id) is its own user: another such client gets 404. With
// SessionConfig.BindClient, alice's other client gets 404 too. The same
// holds with a Store (the owner record is the user's). Before the user
// was the key, alice's other client got 404 and the go-sdk client closed
// its session at step-up.
func TestSessionBoundToUser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		strict bool
		store  bool
	}{
		{"user", false, false},
		{"user store", false, true},
		{"bind client", true, false},
		{"bind client store", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newUserEnv(t, func(c *Config) {
				c.Sessions.BindClient = tc.strict
				if tc.store {
					c.Sessions.Store = newMemoryOwnerStore(memoryOwnerConfig{})
				}
			})
			tok := func(spec authtest.Token) string {
				spec.Scopes = []string{"mcp", "tools:read"}
				return e.f.iss.Token(t, spec)
			}
			alice := authtest.Token{Subject: "alice", ClientID: "https://app.example/a", Tenant: "tenant-a"}
			sid := e.create(t, tok(alice))
			other := alice
			other.ClientID = "https://app.example/registered-at-step-up"
			bob := alice
			bob.Subject = "bob"
			elsewhere := alice
			elsewhere.Issuer = otherIssuer
			tenant := alice
			tenant.Tenant = "tenant-b"
			wantOther := http.StatusOK
			if tc.strict {
				wantOther = http.StatusNotFound
			}
			list := rpcBody(legacyRev, "tools/list", "")
			for _, c := range []struct {
				name string
				tok  authtest.Token
				want int
			}{
				{"alice", alice, http.StatusOK},
				{"alice, other client", other, wantOther},
				{"bob", bob, http.StatusNotFound},
				{"alice at another issuer", elsewhere, http.StatusNotFound},
				{"alice at another tenant", tenant, http.StatusNotFound},
			} {
				for _, method := range []string{http.MethodPost, http.MethodGet} {
					before := e.srv.servedCount()
					w := e.do(t, method, tok(c.tok), sid, list)
					if w.Code != c.want {
						t.Errorf("%s %s: %d, want %d: %s", c.name, method, w.Code, c.want, w.Body)
					}
					if c.want == http.StatusNotFound && w.Body.String() != bodySessionNotFound {
						t.Errorf("%s %s: body %s", c.name, method, w.Body)
					}
					if served := e.srv.servedCount() - before; (c.want == http.StatusOK) != (served == 1) {
						t.Errorf("%s %s: the server served %d requests", c.name, method, served)
					}
				}
			}

			// A client acting for itself is its own user.
			svc := authtest.Token{Subject: "svc-1", ClientID: "svc-1"}
			sid = e.create(t, tok(svc))
			if w := e.do(t, http.MethodGet, tok(svc), sid, ""); w.Code != http.StatusOK {
				t.Errorf("svc-1 in its session: %d", w.Code)
			}
			if w := e.do(t, http.MethodGet, tok(authtest.Token{Subject: "svc-2", ClientID: "svc-2"}), sid, ""); w.Code != http.StatusNotFound {
				t.Errorf("svc-2 in svc-1's session: %d, want 404", w.Code)
			}
			if w := e.do(t, http.MethodGet, tok(authtest.Token{Subject: "svc-1", ClientID: "user-app"}), sid, ""); w.Code != http.StatusNotFound {
				t.Errorf("user svc-1 through another client in client svc-1's session: %d, want 404", w.Code)
			}

			// The other client of alice ends the session it shares.
			if !tc.strict {
				sid = e.create(t, tok(alice))
				if w := e.do(t, http.MethodDelete, tok(other), sid, ""); w.Code != http.StatusNoContent {
					t.Fatalf("alice's other client DELETE: %d", w.Code)
				}
				if w := e.do(t, http.MethodGet, tok(alice), sid, ""); w.Code != http.StatusNotFound {
					t.Fatalf("after DELETE: %d, want 404", w.Code)
				}
			}
		})
	}
}

// TestPrincipalUserID: UserID is one key per user, whatever the client;
// the two forms (a user; a client acting for itself, detected by an empty
// "sub" or one equal to client_id) never collide; isUserID agrees with
// UserID, and userOf maps an ID to its UserID.
func TestPrincipalUserID(t *testing.T) {
	ps := []*Principal{
		nil,
		{Anonymous: true},
		{},
		{Issuer: "https://as", Subject: "alice", ClientID: "c", Tenant: "t"},
		{Issuer: "https://as", Subject: "alice", ClientID: "c2", Tenant: "t"},
		{Issuer: "https://as", Subject: "alice", ClientID: "", Tenant: "t"},
		{Issuer: "https://as", Subject: "alice", ClientID: "alice", Tenant: "t"}, // acting for itself
		{Issuer: "https://as", Subject: "", ClientID: "alice", Tenant: "t"},      // acting for itself
		{Issuer: "https://as", Subject: "", ClientID: "c", Tenant: "t"},
		{Issuer: "https://as", Subject: "alice", ClientID: "c", Tenant: ""},
		{Issuer: "https://as2", Subject: "alice", ClientID: "c", Tenant: "t"},
		{Issuer: "https://as", Subject: "t", ClientID: "c", Tenant: "alice"},
		{Issuer: "https://as", Subject: "alice:1", ClientID: "c"},
		{Issuer: strings.Repeat("i", 123), Subject: "a"},
	}
	for i, p := range ps {
		for j, q := range ps {
			if got, want := p.isUserID(q.UserID()), p.UserID() == q.UserID(); got != want {
				t.Errorf("%d.isUserID(%d.UserID() = %q) = %v", i, j, q.UserID(), got)
			}
		}
		if p != nil && !p.Anonymous {
			if got := userOf(p.ID()); got != p.UserID() {
				t.Errorf("%d: userOf(ID) = %q, UserID %q", i, got, p.UserID())
			}
			if got := userOf(p.UserID()); got != p.UserID() {
				t.Errorf("%d: userOf(UserID) = %q", i, got)
			}
			closer := &Principal{ownerID: p.ID()}
			if closer.UserID() != p.UserID() {
				t.Errorf("%d: the closing principal's UserID %q, want %q", i, closer.UserID(), p.UserID())
			}
		}
	}
	same := [][2]int{{3, 4}, {3, 5}, {6, 7}}
	for _, s := range same {
		if ps[s[0]].UserID() != ps[s[1]].UserID() {
			t.Errorf("%d and %d: UserIDs %q and %q differ", s[0], s[1], ps[s[0]].UserID(), ps[s[1]].UserID())
		}
	}
	seen := map[string]int{}
	for i, p := range ps {
		u := p.UserID()
		if j, ok := seen[u]; ok && !(j == 3 && (i == 4 || i == 5)) && !(j == 6 && i == 7) {
			t.Errorf("%d and %d share UserID %q", j, i, u)
		}
		if _, ok := seen[u]; !ok {
			seen[u] = i
		}
	}
	if got := ps[3].UserID(); got != "u10:https://as5:alice1:t" {
		t.Errorf("UserID = %q", got)
	}
	if got := ps[6].UserID(); got != "c10:https://as1:t5:alice" {
		t.Errorf("client UserID = %q", got)
	}
}
