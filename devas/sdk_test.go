package devas_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/prm"
)

// sdkRedirect is the redirect URI the SDK client registers and uses. No
// listener is needed: the fetcher stops at the redirect.
const sdkRedirect = "http://127.0.0.1/callback"

// sdkEnv is devas plus a protected resource publishing RFC 9728 metadata
// that names it, as an MCP server would.
type sdkEnv struct {
	*env
	mcpURL  string // the protected resource (the MCP endpoint)
	prmURL  string // its metadata URL
	scopes  []string
	browser *http.Client
}

func startSDK(t *testing.T, mod func(*devas.Config)) *sdkEnv {
	t.Helper()
	rs := httptest.NewUnstartedServer(nil)
	mcpURL := "http://" + rs.Listener.Addr().String() + "/mcp"
	scopes := []string{"tools:read", "tools:write"}
	e := start(t, func(c *devas.Config) {
		c.Resources = []string{mcpURL}
		c.Scopes = scopes
		c.Clients = nil
		if mod != nil {
			mod(c)
		}
	})
	h, err := prm.Handler(prm.Metadata{Resource: mcpURL, AuthorizationServers: []string{e.issuer}, ScopesSupported: scopes})
	if err != nil {
		t.Fatalf("prm.Handler: %v", err)
	}
	rs.Config.Handler = h
	rs.Start()
	t.Cleanup(rs.Close)
	prmURL, err := prm.MetadataURL(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	// Every redirect devas sends goes to the client's redirect URI: stop
	// there, as a browser handing the response to the client would.
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &sdkEnv{env: e, mcpURL: mcpURL, prmURL: prmURL, scopes: scopes, browser: browser}
}

// fetcher plays the browser: it opens the authorization URL (adding
// extra parameters), approves the consent page if one is shown, and
// parses code, state and iss from the redirect.
func (s *sdkEnv) fetcher(extra url.Values) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u := args.URL
		if len(extra) > 0 {
			u += "&" + extra.Encode()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := s.browser.Do(req)
		if err != nil {
			return nil, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK { // consent page: approve
			id, csrf := requestIDRe.FindStringSubmatch(string(body)), csrfRe.FindStringSubmatch(string(body))
			if id == nil || csrf == nil {
				return nil, errors.New("consent page without form")
			}
			resp, err = s.browser.PostForm(s.issuer+"/authorize", url.Values{"request_id": {id[1]}, "csrf": {csrf[1]}, "action": {"approve"}})
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
		}
		if resp.StatusCode != http.StatusFound {
			return nil, fmt.Errorf("authorization: status %d: %s", resp.StatusCode, body)
		}
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		q := loc.Query()
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("authorization error %s: %s", e, q.Get("error_description"))
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// authorize runs handler.Authorize on a synthetic 401 from the MCP
// endpoint and returns the access token's verified claims.
func (s *sdkEnv) authorize(t *testing.T, cfg *auth.AuthorizationCodeHandlerConfig) atClaims {
	t.Helper()
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatalf("NewAuthorizationCodeHandler: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.mcpURL, nil)
	resp := &http.Response{
		StatusCode: http.StatusUnauthorized,
		Header:     http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + s.prmURL + `"`}},
		Body:       io.NopCloser(strings.NewReader("")),
		Request:    req,
	}
	if err := h.Authorize(context.Background(), req, resp); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource: %v", err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	c, hdr := s.decode(tok.AccessToken)
	if hdr.ExtraHeaders["typ"] != "at+jwt" || c.Audience != s.mcpURL || c.Issuer != s.issuer {
		t.Errorf("token: typ %v aud %v iss %s", hdr.ExtraHeaders["typ"], c.Audience, c.Issuer)
	}
	// The SDK does not keep the scope order (it unions scope sets).
	if got := strings.Fields(c.Scope); len(got) != 2 || !slices.Contains(got, "tools:read") || !slices.Contains(got, "tools:write") {
		t.Errorf("scope = %q, want the PRM scopes", c.Scope)
	}
	return c
}

// TestSDKCIMD: the official MCP Go SDK client completes discovery (PRM ->
// RFC 8414), CIMD client identification, authorization with PKCE S256,
// resource and state, RFC 9207 iss validation, and the token exchange
// (x/oauth2 probing Basic then body for the public client).
func TestSDKCIMD(t *testing.T) {
	h := newCIMDHost(t)
	id := h.add("/sdk-client.json", func(d map[string]any) { d["redirect_uris"] = []string{sdkRedirect} })
	for _, consent := range []bool{false, true} {
		t.Run(fmt.Sprintf("consent=%v", consent), func(t *testing.T) {
			s := startSDK(t, func(c *devas.Config) {
				c.CIMD.RootCAs, c.CIMD.InsecureAllowLoopback = h.pool(), true
				c.AutoApprove = !consent
			})
			c := s.authorize(t, &auth.AuthorizationCodeHandlerConfig{
				ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: id},
				RedirectURL:                    sdkRedirect,
				AuthorizationCodeFetcher:       s.fetcher(nil),
			})
			if c.ClientID != id || c.Subject != "dev-user" || c.Tenant != "tenant-a" {
				t.Errorf("claims = %+v", c)
			}
		})
	}
}

// TestSDKDCR: the SDK client registers (RFC 7591 with application_type,
// client_secret_basic by default) and completes the flow; login_hint
// added by the fetcher selects another tenant.
func TestSDKDCR(t *testing.T) {
	s := startSDK(t, func(c *devas.Config) { c.EnableDCR = true; c.DisableCIMD = true; c.AllowLoginHint = true })
	c := s.authorize(t, &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "sdk test", RedirectURIs: []string{sdkRedirect}},
		},
		AuthorizationCodeFetcher: s.fetcher(url.Values{"login_hint": {"bob@tenant-b"}}),
	})
	if !strings.HasPrefix(c.ClientID, "dcr_") || c.Subject != "bob" || c.Tenant != "tenant-b" {
		t.Errorf("claims = %+v", c)
	}
}

// TestSDKRefreshToken: with RequestRefreshToken the SDK adds
// offline_access (listed in scopes_supported) and receives a refresh
// token.
func TestSDKRefreshToken(t *testing.T) {
	h := newCIMDHost(t)
	id := h.add("/sdk-refresh.json", func(d map[string]any) {
		d["redirect_uris"] = []string{sdkRedirect}
		d["grant_types"] = []string{"authorization_code", "refresh_token"}
	})
	s := startSDK(t, func(c *devas.Config) {
		c.CIMD.RootCAs, c.CIMD.InsecureAllowLoopback = h.pool(), true
		c.RefreshTokens = true
	})
	ah, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: id},
		RedirectURL:                    sdkRedirect,
		AuthorizationCodeFetcher:       s.fetcher(nil),
		RequestRefreshToken:            true,
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.mcpURL, nil)
	resp := &http.Response{
		StatusCode: http.StatusUnauthorized,
		Header:     http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + s.prmURL + `"`}},
		Body:       io.NopCloser(strings.NewReader("")),
	}
	if err := ah.Authorize(context.Background(), req, resp); err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	ts, _ := ah.TokenSource(context.Background())
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" {
		t.Errorf("no refresh token")
	}
	if c, _ := s.decode(tok.AccessToken); len(strings.Fields(c.Scope)) != 3 || !strings.Contains(c.Scope, "offline_access") {
		t.Errorf("scope = %q, want the PRM scopes and offline_access", c.Scope)
	}
	// The refresh token works for the SDK's client at the token endpoint.
	tr := s.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {id}, "resource": {s.mcpURL}}, nil)
	if tr.Status != http.StatusOK || tr.RefreshToken == "" {
		t.Errorf("refresh: %d %q", tr.Status, tr.Error)
	}
}
