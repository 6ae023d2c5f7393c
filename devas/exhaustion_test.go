package devas_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

// otherClient is a second public client, registered next to publicClient,
// which plays the attacker in the exhaustion tests.
func otherClient() cimd.Client {
	c := publicClient()
	c.ClientID = "attacker"
	c.RedirectURIs = []string{"http://127.0.0.1/evil"}
	return c
}

// otherLogin runs the authorization code flow for otherClient with
// offline_access and returns its first refresh token.
func (e *env) otherLogin() string {
	e.t.Helper()
	q := authParams()
	q.Set("client_id", "attacker")
	q.Set("redirect_uri", "http://127.0.0.1/evil")
	q.Set("scope", "tools:read offline_access")
	f := codeForm(e.code(q))
	f.Set("client_id", "attacker")
	f.Set("redirect_uri", "http://127.0.0.1/evil")
	rt := e.token(f, nil).RefreshToken
	if rt == "" {
		e.t.Fatal("no refresh token for the other client")
	}
	return rt
}

// TestRefreshStoreExhaustion: one client refreshing in a loop must not
// fill the refresh store with spent tokens so that another client's
// refresh spends its token and gets none back. Rotation replaces the
// family's token in place; the store does not grow with refreshes.
func TestRefreshStoreExhaustion(t *testing.T) {
	if testing.Short() {
		t.Skip("17k token requests")
	}
	e := start(t, func(c *devas.Config) {
		c.RefreshTokens = true
		c.Clients = append(c.Clients, otherClient())
	})
	q := authParams()
	q.Set("scope", "tools:read offline_access")
	victim := e.token(codeForm(e.code(q)), nil).RefreshToken
	if victim == "" {
		t.Fatal("no refresh token for the victim")
	}
	rt := e.otherLogin()
	const rounds = 16384 + 16 // more than the store holds
	for i := 0; i < rounds; i++ {
		f := refreshForm(rt)
		f.Set("client_id", "attacker")
		tr := e.token(f, nil)
		if tr.Status != http.StatusOK || tr.RefreshToken == "" {
			t.Fatalf("attacker's own refresh %d: %d %q, refresh token %q", i, tr.Status, tr.Error, tr.RefreshToken)
		}
		rt = tr.RefreshToken
	}
	tr := e.token(refreshForm(victim), nil)
	if tr.Status != http.StatusOK || tr.RefreshToken == "" {
		t.Fatalf("victim refresh after the flood: %d %q, refresh token %q", tr.Status, tr.Error, tr.RefreshToken)
	}
	if again := e.token(refreshForm(tr.RefreshToken), nil); again.Status != http.StatusOK {
		t.Fatalf("victim's rotated token: %d %q", again.Status, again.Error)
	}
}

// TestPendingConsentNotExhaustible: unauthenticated GET /authorize
// requests (without cookies, so each gets a new CSRF token) keep no
// server state, so they cannot fill a store and lock other users out of
// the consent page for ConsentTTL.
func TestPendingConsentNotExhaustible(t *testing.T) {
	e := consentEnv(t, "Dev Client")
	for i := 0; i < 1100; i++ { // more than the old 1024-entry store
		resp, _ := e.authorize(authParams())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("flood request %d: status %d", i, resp.StatusCode)
		}
	}
	id, csrf, cookie, _ := e.consentPage()
	resp := e.postConsent(url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"approve"}}, cookie)
	got := e.redirected(resp, redirectURI)
	if got.Get("code") == "" {
		t.Fatalf("victim's consent after the flood: %v", got)
	}
	if tr := e.token(codeForm(got.Get("code")), nil); tr.Status != http.StatusOK {
		t.Fatalf("victim's code: %d %q", tr.Status, tr.Error)
	}
}

// TestCodeReplayRaceRevokesFamily: a replay of an authorization code that
// races the legitimate exchange is detected, and then the refresh token
// issued from the code must not survive (RFC 6749 §4.1.2), whichever
// request wins. Bounded number of trials; any survivor fails.
func TestCodeReplayRaceRevokesFamily(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.RefreshTokens = true })
	const trials = 200
	survived, detected := 0, 0
	for range trials {
		q := authParams()
		q.Set("scope", "tools:read offline_access")
		code := e.code(q)
		var legit, replay tokenReply
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); legit = e.token(codeForm(code), nil) }()
		go func() {
			defer wg.Done()
			f := codeForm(code)
			f.Set("code_verifier", "wrong-wrong-wrong-wrong-wrong-wrong-wrong-wrong")
			replay = e.token(f, nil)
		}()
		wg.Wait()
		if replay.Status == http.StatusOK {
			t.Fatal("a code with a wrong verifier was exchanged")
		}
		if legit.Status == http.StatusOK && replay.Error == "invalid_grant" {
			detected++
		}
		// Every interleaving presents the code twice, so whatever was
		// issued from it must be dead now.
		if legit.RefreshToken != "" {
			if tr := e.token(refreshForm(legit.RefreshToken), nil); tr.Status == http.StatusOK {
				survived++
			}
		}
	}
	if survived > 0 {
		t.Fatalf("%d/%d trials: the refresh token issued from a replayed code survived (%d replays detected after a successful exchange)", survived, trials, detected)
	}
}
