package devas

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
)

// TestRefreshStore covers the family store: creation, rotation in place,
// spent tokens, expiry, and revocation before and after creation.
func TestRefreshStore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := t0.Add(time.Hour)
	g := grant{ClientID: "c"}
	s := newRefreshStore(2, 2)

	if err := s.create("f1", g, "h1", exp, t0); err != nil {
		t.Fatal(err)
	}
	// Rotation replaces the live token in place: the store does not grow.
	for i, h := range []string{"h2", "h3", "h4"} {
		prev := []string{"h1", "h2", "h3"}[i]
		if err := s.rotate("f1", prev, h, exp, t0); err != nil {
			t.Fatalf("rotate %s -> %s: %v", prev, h, err)
		}
	}
	if n, _ := s.len(); n != 1 {
		t.Errorf("families after 3 rotations = %d, want 1", n)
	}
	// Any earlier token is not current, however old.
	for _, h := range []string{"h1", "h3"} {
		if err := s.rotate("f1", h, "x", exp, t0); !errors.Is(err, errNotCurrent) {
			t.Errorf("rotate from spent %s: %v, want errNotCurrent", h, err)
		}
	}
	if f, ok := s.get("f1", t0); !ok || f.Current != "h4" || f.ClientID != "c" {
		t.Errorf("get = %+v %v", f, ok)
	}

	// Full: a third family is refused; an expired one makes room.
	if err := s.create("f2", g, "k1", t0.Add(time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.create("f3", g, "m1", exp, t0); !errors.Is(err, errStoreFull) {
		t.Errorf("create into a full store: %v, want errStoreFull", err)
	}
	later := t0.Add(time.Minute)
	if _, ok := s.get("f2", later); ok {
		t.Error("expired family found")
	}
	if err := s.create("f3", g, "m1", exp, later); err != nil {
		t.Errorf("create after expiry: %v", err)
	}

	// Revoking an existing family deletes it and records nothing.
	s.revoke("f3", exp, later)
	if _, ok := s.get("f3", later); ok {
		t.Error("revoked family found")
	}
	if err := s.rotate("f3", "m1", "m2", exp, later); !errors.Is(err, errUnknownFamily) {
		t.Errorf("rotate revoked: %v", err)
	}
	// Revoking before creation (a code replay winning the race) makes the
	// creation fail, until the revocation expires.
	s.revoke("f4", later.Add(time.Hour), later)
	if err := s.create("f4", g, "n1", exp, later); !errors.Is(err, errRevoked) {
		t.Errorf("create after revoke: %v, want errRevoked", err)
	}
	if _, r := s.len(); r != 1 {
		t.Errorf("revoked set = %d, want 1 (existing families are deleted, not recorded)", r)
	}
	// The revoked set is bounded: the entry expiring first goes.
	s.revoke("f5", later.Add(2*time.Hour), later)
	s.revoke("f6", later.Add(3*time.Hour), later)
	if _, r := s.len(); r != 2 {
		t.Errorf("revoked set = %d, want 2", r)
	}
	if err := s.create("f4", g, "n1", exp, later); errors.Is(err, errRevoked) {
		t.Error("the oldest revoked id was not forgotten")
	}
	if err := s.create("f6", g, "n1", exp, later); !errors.Is(err, errRevoked) {
		t.Errorf("create f6: %v, want errRevoked", err)
	}
	s.revoke("", exp, later) // no family: nothing happens
}

func TestRefreshTokenFamily(t *testing.T) {
	fam := newJTI()
	rt := newRefreshToken(fam)
	if got, ok := refreshTokenFamily(rt); !ok || got != fam {
		t.Fatalf("refreshTokenFamily(%q) = %q %v", rt, got, ok)
	}
	for _, bad := range []string{"", "nope", fam, fam + ".", "." + fam, strings.Repeat("a", 21) + ".x",
		strings.Repeat("a", 21) + "~.x", strings.Repeat("a", 21) + "..x", strings.Repeat("a", 23) + ".x"} {
		if f, ok := refreshTokenFamily(bad); ok {
			t.Errorf("refreshTokenFamily(%q) = %q, want refusal", bad, f)
		}
	}
}

// TestConsentSeal: a sealed consent form opens only unchanged, with the
// key that sealed it, before it expires.
func TestConsentSeal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Server{consentKey: []byte(strings.Repeat("k", 32))}
	other := &Server{consentKey: []byte(strings.Repeat("o", 32))}
	f := &consentForm{Req: authzRequest{grant: grant{ClientID: "c"}, State: "<&>"}, CSRF: "x", Nonce: "n", Expires: t0.Add(consentTTL)}
	tok, ok := s.sealConsent(f)
	if !ok {
		t.Fatal("seal failed")
	}
	got, ok := s.openConsent(tok, t0)
	if !ok || got.Req.ClientID != "c" || got.Req.State != "<&>" || got.CSRF != "x" || got.Nonce != "n" {
		t.Fatalf("open = %+v %v", got, ok)
	}
	body, sig, _ := strings.Cut(tok, ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for name, bad := range map[string]string{
		"body changed":      flip(body, 5) + "." + sig,
		"mac changed":       body + "." + flip(sig, 3),
		"no mac":            body,
		"empty":             "",
		"other key":         "",
		"oversized":         tok + strings.Repeat("A", maxConsentFormBytes),
		"mac of other body": body[:len(body)-4] + "." + sig,
	} {
		if name == "other key" {
			if _, ok := other.openConsent(tok, t0); ok {
				t.Errorf("%s: opened", name)
			}
			continue
		}
		if _, ok := s.openConsent(bad, t0); ok {
			t.Errorf("%s: opened", name)
		}
	}
	if _, ok := s.openConsent(tok, t0.Add(consentTTL)); ok {
		t.Error("expired form opened")
	}
	// A request too large for the consent POST is not sealed.
	f.Req.State = strings.Repeat("s", maxConsentFormBytes)
	if _, ok := s.sealConsent(f); ok {
		t.Error("sealed a form larger than maxConsentFormBytes")
	}
}

// TestRefreshStoreFull: when the family store is full, a new code
// exchange gets an access token without a refresh token, but existing
// families keep rotating (in place, no room needed), their old tokens
// stay valid until the answer with the successor is ready, and reuse
// detection still works.
func TestRefreshStoreFull(t *testing.T) {
	const (
		cb       = "http://127.0.0.1/cb"
		res      = "http://127.0.0.1:8080/mcp"
		verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	)
	c := cimd.Client{Document: cimd.Document{ClientID: "c", RedirectURIs: []string{cb},
		GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none"}}
	s, err := New(Config{Issuer: "http://127.0.0.1:9000", Resources: []string{res}, Clients: []cimd.Client{c},
		AutoApprove: true, RefreshTokens: true, DisableCIMD: true})
	if err != nil {
		t.Fatal(err)
	}
	s.refresh = newRefreshStore(1, 16)
	post := func(f url.Values) (int, tokenResponse) {
		r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(f.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var tr tokenResponse
		_ = json.Unmarshal(w.Body.Bytes(), &tr)
		return w.Code, tr
	}
	login := func() (int, tokenResponse) {
		q := url.Values{"response_type": {"code"}, "client_id": {"c"}, "redirect_uri": {cb}, "resource": {res},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "scope": {offlineAccess}}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/authorize?"+q.Encode(), nil))
		loc, _ := url.Parse(w.Header().Get("Location"))
		return post(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
			"redirect_uri": {cb}, "client_id": {"c"}})
	}
	refresh := func(rt string) (int, tokenResponse) {
		return post(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c"}})
	}

	st, first := login()
	if st != http.StatusOK || first.RefreshToken == "" {
		t.Fatalf("first login: %d %+v", st, first)
	}
	st, second := login()
	if st != http.StatusOK || second.AccessToken == "" || second.RefreshToken != "" {
		t.Fatalf("login into a full store: %d, access token %v, refresh token %q; want 200, an access token and no refresh token",
			st, second.AccessToken != "", second.RefreshToken)
	}
	rt := first.RefreshToken
	for i := range 10 {
		st, tr := refresh(rt)
		if st != http.StatusOK || tr.RefreshToken == "" {
			t.Fatalf("refresh %d with a full store: %d %+v", i, st, tr)
		}
		rt = tr.RefreshToken
	}
	if st, _ := refresh(first.RefreshToken); st != http.StatusBadRequest {
		t.Errorf("reuse of the first token: %d, want 400", st)
	}
	if st, _ := refresh(rt); st != http.StatusBadRequest {
		t.Errorf("latest token after reuse: %d, want 400 (family revoked)", st)
	}
	if n, _ := s.refresh.len(); n != 0 {
		t.Errorf("families after revocation = %d", n)
	}
}
