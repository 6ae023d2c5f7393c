package mcpguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// TestGuardDPoP: a DPoP policy in Config.Middleware is enough: the Guard
// makes its validator accept cnf, and a DPoP request with a bound token
// passes, while the same token as Bearer is refused. The issuer's clock is
// pinned far from the wall clock, so the proof's iat is accepted only if
// the middleware reads the same clock: set in Middleware.Now, or inherited
// from Validate.Now alone (one pinned clock pins the whole Guard).
func TestGuardDPoP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ownClock bool
	}{{"Middleware.Now set", true}, {"only Validate.Now set", false}} {
		t.Run(tc.name, func(t *testing.T) { testGuardDPoP(t, tc.ownClock) })
	}
}

func testGuardDPoP(t *testing.T, ownClock bool) {
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{})
	srv := httptest.NewUnstartedServer(nil)
	resource := "http://" + srv.Listener.Addr().String() + "/mcp"
	key, err := client.NewDPoPKey(nil, iss.Now)
	if err != nil {
		t.Fatal(err)
	}
	mc := middleware.Config{DPoP: middleware.DPoPConfig{Policy: middleware.DPoPRequired}}
	if ownClock {
		mc.Now = iss.Now
	}
	g, err := New(Config{
		Resource:   resource,
		Issuers:    []string{iss.URL},
		Keys:       map[string]validate.KeySource{iss.URL: &validate.StaticKeys{Set: iss.Keys()}},
		Validate:   validate.Config{Now: iss.Now},
		Middleware: mc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	mux := http.NewServeMux()
	g.Mount(mux, whoami)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)

	tok := iss.Token(t, authtest.Token{Audience: []string{resource}, Claims: map[string]any{"cnf": map[string]any{"jkt": key.Thumbprint()}}})
	tr, err := client.New(client.Config{
		Resource:    resource,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "DPoP"}),
		DPoP:        key,
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(resource)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DPoP request: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	req, _ := http.NewRequest(http.MethodGet, resource, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.HasPrefix(ch, "DPoP ") {
		t.Fatalf("Bearer: %d %q, want 401 with a DPoP challenge", resp.StatusCode, ch)
	}
}
