package devas_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

var (
	requestIDRe = regexp.MustCompile(`name="request_id" value="([^"]+)"`)
	csrfRe      = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// consentEnv starts a server with the consent page on, for a client named
// name.
func consentEnv(t *testing.T, name string) *env {
	c := publicClient()
	c.ClientName = name
	return start(t, func(cfg *devas.Config) { cfg.AutoApprove = false; cfg.Clients = []cimd.Client{c} })
}

// consentPage fetches the consent page and returns the form fields and
// the csrf cookie.
func (e *env) consentPage() (id, csrf string, cookie *http.Cookie, body string) {
	e.t.Helper()
	resp, body := e.authorize(authParams())
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("consent page status = %d", resp.StatusCode)
	}
	m1, m2 := requestIDRe.FindStringSubmatch(body), csrfRe.FindStringSubmatch(body)
	if m1 == nil || m2 == nil || len(resp.Cookies()) != 1 {
		e.t.Fatalf("consent page lacks form fields or cookie:\n%s", body)
	}
	return m1[1], m2[1], resp.Cookies()[0], body
}

func (e *env) postConsent(form url.Values, cookie *http.Cookie) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.issuer+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestConsentPage: escaping, anti-framing headers, cookie attributes.
func TestConsentPage(t *testing.T) {
	e := consentEnv(t, `<script>alert("x")</script>`)
	resp, body := e.authorize(authParams())
	if strings.Contains(body, "<script>") {
		t.Errorf("client name not escaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("escaped client name missing:\n%s", body)
	}
	for _, want := range []string{"127.0.0.1", "dev-user", "tenant-a", "tools:read", resource, "not for production"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	h := resp.Header
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		h.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: XFO %q CSP %q CC %q", h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"), h.Get("Cache-Control"))
	}
	c := resp.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/authorize" {
		t.Errorf("cookie = %+v, want HttpOnly, SameSite=Strict, Path=/authorize", c)
	}
}

// TestConsentApproveDeny: the form works once, with the cookie.
func TestConsentApproveDeny(t *testing.T) {
	e := consentEnv(t, "Dev Client")
	id, csrf, cookie, _ := e.consentPage()
	resp := e.postConsent(url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"approve"}}, cookie)
	got := e.redirected(resp, redirectURI)
	if got.Get("code") == "" || got.Get("state") != "xyz" || got.Get("iss") != e.issuer {
		t.Fatalf("approve redirect = %v", got)
	}
	if tr := e.token(codeForm(got.Get("code")), nil); tr.Status != http.StatusOK {
		t.Fatalf("token: %q", tr.Error)
	}
	// Replaying the form fails: the request was spent.
	if resp := e.postConsent(url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"approve"}}, cookie); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replay status = %d, want 400", resp.StatusCode)
	}

	id, csrf, cookie, _ = e.consentPage()
	resp = e.postConsent(url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"deny"}}, cookie)
	if got := e.redirected(resp, redirectURI); got.Get("error") != "access_denied" || got.Get("state") != "xyz" {
		t.Errorf("deny redirect = %v", got)
	}
}

// TestConsentCSRF: the form is refused without the matching cookie.
func TestConsentCSRF(t *testing.T) {
	e := consentEnv(t, "Dev Client")
	tests := []struct {
		name string
		mod  func(f url.Values, c **http.Cookie)
		want int
	}{
		{name: "no cookie", mod: func(_ url.Values, c **http.Cookie) { *c = nil }, want: http.StatusForbidden},
		{name: "cookie differs", mod: func(_ url.Values, c **http.Cookie) {
			*c = &http.Cookie{Name: "devas_csrf", Value: strings.Repeat("A", 43)}
		}, want: http.StatusForbidden},
		{name: "form token differs", mod: func(f url.Values, _ **http.Cookie) { f.Set("csrf", strings.Repeat("A", 43)) }, want: http.StatusForbidden},
		{name: "no form token", mod: func(f url.Values, _ **http.Cookie) { f.Del("csrf") }, want: http.StatusForbidden},
		{name: "unknown request", mod: func(f url.Values, _ **http.Cookie) { f.Set("request_id", "nope") }, want: http.StatusBadRequest},
		{name: "tampered request", mod: func(f url.Values, _ **http.Cookie) {
			id := []byte(f.Get("request_id"))
			id[10] ^= 3 // any change to the sealed form fails its MAC
			f.Set("request_id", string(id))
		}, want: http.StatusBadRequest},
		{name: "unknown action", mod: func(f url.Values, _ **http.Cookie) { f.Set("action", "maybe") }, want: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, csrf, cookie, _ := e.consentPage()
			f := url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"approve"}}
			tt.mod(f, &cookie)
			resp := e.postConsent(f, cookie)
			if resp.StatusCode != tt.want || resp.Header.Get("Location") != "" {
				t.Errorf("status %d Location %q, want %d and no redirect", resp.StatusCode, resp.Header.Get("Location"), tt.want)
			}
		})
	}
}

// TestConsentExpiry: a consent page older than ConsentTTL is refused.
func TestConsentExpiry(t *testing.T) {
	e := consentEnv(t, "Dev Client")
	id, csrf, cookie, _ := e.consentPage()
	e.clock.Advance(10 * time.Minute)
	if resp := e.postConsent(url.Values{"request_id": {id}, "csrf": {csrf}, "action": {"approve"}}, cookie); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
}
