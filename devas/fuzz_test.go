package devas_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

func fuzzServer(f *testing.F) *devas.Server {
	as, err := devas.New(devas.Config{
		Issuer:         "http://127.0.0.1:9000",
		Resources:      []string{resource},
		Scopes:         []string{"tools:read", "tools:write"},
		Clients:        []cimd.Client{publicClient()},
		AutoApprove:    true,
		AllowLoginHint: true,
		RefreshTokens:  true,
		DisableCIMD:    true, // no network from fuzzed client_ids
	})
	if err != nil {
		f.Fatal(err)
	}
	return as
}

// FuzzAuthorize: any query gives no panic, and a redirect only ever goes
// to the registered redirect URI (RFC 6749 §4.1.2.1).
func FuzzAuthorize(f *testing.F) {
	as := fuzzServer(f)
	f.Add(authParams().Encode())
	q := authParams()
	q.Set("login_hint", "alice@tenant-b")
	q.Add("resource", "x")
	f.Add(q.Encode())
	f.Add("client_id=dev-client&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback%3Fa%3Db")
	f.Add("client_id=dev-client&client_id=x&redirect_uri=javascript:alert(1)")
	f.Add("%zz&;;==")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/authorize", nil)
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		as.ServeHTTP(w, r)
		if w.Code != http.StatusFound {
			return
		}
		loc, err := url.Parse(w.Header().Get("Location"))
		if err != nil {
			t.Fatalf("unparsable Location: %v", err)
		}
		loc.RawQuery = ""
		if c := (&cimd.Client{Document: cimd.Document{RedirectURIs: []string{redirectURI}}}); !c.RedirectURIAllowed(loc.String()) {
			t.Fatalf("redirected to unregistered %s", w.Header().Get("Location"))
		}
		if got := w.Header().Get("Location"); !strings.Contains(got, "iss=") {
			t.Fatalf("redirect without iss: %s", got)
		}
	})
}

// FuzzToken: any form body gives no panic and never a token without a
// valid code or refresh token.
func FuzzToken(f *testing.F) {
	as := fuzzServer(f)
	f.Add(codeForm("x").Encode(), "")
	f.Add(refreshForm("x").Encode(), "")
	f.Add("grant_type=authorization_code&code=&client_id=dev-client", "Basic ZGV2LWNsaWVudDo=")
	f.Add("client_id=a&client_id=b", "Basic !!!")
	f.Fuzz(func(t *testing.T, body, authz string) {
		r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		as.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			t.Fatalf("token issued for %q", body)
		}
	})
}
