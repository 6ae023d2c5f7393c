// Package integration holds mcpguard's end-to-end tests: the example MCP
// server (examples/mcpserver/server), the development authorization server
// (devas) and test issuers (authtest) run in-process on 127.0.0.1, and the
// official MCP Go SDK client (or mcpguard's client transport, or raw HTTP)
// talks to them over real HTTP. Nothing leaves the machine.
package integration

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/proxy"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// The MCP revisions under test.
const (
	rev20251125 = "2025-11-25"
	rev20260728 = "2026-07-28"
)

var revisions = []string{rev20251125, rev20260728}

// baseScope is the example's default base scope.
const baseScope = "mcp:tools"

// testTimeout bounds every test's context: a hung server fails the test
// instead of the suite.
const testTimeout = 30 * time.Second

// redirectURI is the loopback redirect URI every test client registers.
// Nothing listens there: codeFetcher reads the code from the Location
// header of the authorization server's redirect.
const redirectURI = "http://127.0.0.1:3000/callback"

// rawClientID is a pre-registered public client of the authorization
// server, for tests that run the authorization code flow themselves.
const rawClientID = "integration-raw-client"

// envConfig configures newEnv.
type envConfig struct {
	// grantScopes is devas.Config.GrantScopes.
	grantScopes func(clientID, subject string, requested []string) []string
	// dpop is the MCP server's DPoP policy (dpop_test.go); the zero value
	// is off.
	dpop middleware.DPoPPolicy
	// stateful serves with the go-sdk's default stateful handler
	// (server.Config.Stateful; session_test.go).
	stateful bool
	// public is server.Config.Public (public_test.go).
	public middleware.PublicOperations
	// lists is server.Config.Lists (public_test.go).
	lists middleware.ListMode
	// wrapMCP, if set, wraps the example MCP server's handler (issue #11:
	// measuring what clients do with candidate answers).
	wrapMCP func(http.Handler) http.Handler
	// viaProxy puts mcpguard proxy in front of the example server
	// (proxy_test.go): clients see the proxy's URL, whose policy mirrors
	// the example's, and the example trusts only the proxy's assertions.
	viaProxy bool
	// alsoTrust, if set, is a second issuer the MCP server (or the proxy)
	// trusts beside the authorization server (sessionuser_test.go).
	alsoTrust *authtest.Issuer
	// policy is the proxy route's rules (policy_test.go).
	policy proxy.Policy
	// forwardHeaders is the proxy route's forward_headers.
	forwardHeaders []string
	// proxyLists and rateLimit are the proxy route's lists and
	// rate_limit (events_test.go).
	proxyLists string
	rateLimit  proxy.RateLimit
	// rules are the example server's middleware rules (library), or with
	// viaProxy the proxy route's (as policy.rules; events_test.go,
	// rules_clients_test.go).
	rules []middleware.Rule
	// proxyLog, instrument and wrapProxy are the proxy's Config.Logger,
	// Config.Instrument and a wrapper of its handler (events_test.go).
	proxyLog   *slog.Logger
	instrument func(*mcpguard.Config)
	wrapProxy  func(http.Handler) http.Handler
}

// env is one example MCP server and its development authorization server,
// both on 127.0.0.1.
type env struct {
	issuer   string // authorization server issuer identifier
	mcpURL   string // MCP endpoint, the resource identifier
	metaURL  string // RFC 9728 metadata URL of the challenges
	upstream string // with viaProxy: the example server's own URL
	px       *proxy.Proxy
	as       *devmint.Server
	cimdURL  string // a Client ID Metadata Document URL the AS can fetch
	asCounts *counter
}

// counter counts requests per URL path. Safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[r.URL.Path]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) get(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

// newEnv starts the authorization server, a TLS server publishing a
// Client ID Metadata Document, and the example MCP server. The MCP server
// trusts the authorization server through a remote JWKS discovered from
// its metadata (validate/jwks), as the example does for -issuer.
func newEnv(t *testing.T, cfg envConfig) *env {
	t.Helper()
	e := &env{asCounts: &counter{}}

	// Listeners first: each server's configuration needs the other's URL.
	asTS := httptest.NewUnstartedServer(nil)
	mcpTS := httptest.NewUnstartedServer(nil)
	e.issuer = "http://" + asTS.Listener.Addr().String()
	e.mcpURL = "http://" + mcpTS.Listener.Addr().String() + "/mcp"
	var pxTS *httptest.Server
	if cfg.viaProxy {
		pxTS = httptest.NewUnstartedServer(nil)
		e.upstream = e.mcpURL
		e.mcpURL = "http://" + pxTS.Listener.Addr().String() + "/mcp"
	}

	// The CIMD document, over TLS on loopback with httptest's CA.
	docTS := httptest.NewUnstartedServer(nil)
	e.cimdURL = "https://" + docTS.Listener.Addr().String() + "/oauth/client-metadata.json"
	doc, _ := json.Marshal(map[string]any{
		"client_id":                  e.cimdURL,
		"client_name":                "mcpguard integration CIMD client",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	docTS.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client-metadata.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(doc)
	})
	docTS.StartTLS()
	t.Cleanup(docTS.Close)
	roots := x509.NewCertPool()
	roots.AddCert(docTS.Certificate())
	_, portStr, _ := strings.Cut(docTS.Listener.Addr().String(), ":")
	port, _ := strconv.Atoi(portStr)

	as, err := devmint.New(devas.Config{
		Issuer:         e.issuer,
		Resources:      []string{e.mcpURL},
		Scopes:         []string{baseScope, server.ScopeNotesRead, server.ScopeNotesWrite},
		GrantScopes:    cfg.grantScopes,
		AutoApprove:    true,
		AllowLoginHint: true,
		EnableDCR:      true,
		Clients: []cimd.Client{{Document: cimd.Document{
			ClientID:                rawClientID,
			ClientName:              "integration raw client",
			RedirectURIs:            []string{redirectURI},
			TokenEndpointAuthMethod: "none",
			ApplicationType:         "native",
		}}},
		CIMD: cimd.ResolverConfig{
			InsecureAllowLoopback: true,
			RootCAs:               roots,
			AllowedPorts:          []uint16{uint16(port)},
		},
	})
	if err != nil {
		t.Fatalf("devas.New: %v", err)
	}
	e.as = as
	asTS.Config.Handler = e.asCounts.wrap(as)
	asTS.Start()
	t.Cleanup(asTS.Close)

	// The MCP server trusts the authorization server, or behind the proxy
	// the proxy's assertions only.
	trusted, audience, jc, dp := e.issuer, e.mcpURL, jwks.Config{Issuer: e.issuer}, cfg.dpop
	if cfg.viaProxy {
		e.px = startProxy(t, pxTS, e.mcpURL, e.upstream, e.issuer, cfg)
		trusted, audience, dp = e.px.AssertionIssuer(), e.upstream, middleware.DPoPOff
		jc = jwks.Config{Issuer: trusted, JWKSURL: "http://" + pxTS.Listener.Addr().String() + e.px.JWKSPath()}
	}
	keys, err := jwks.New(jc)
	if err != nil {
		t.Fatalf("jwks.New: %v", err)
	}
	t.Cleanup(func() { keys.Close() })
	issuers := []validate.Issuer{{Issuer: trusted, Keys: keys}}
	if cfg.alsoTrust != nil && !cfg.viaProxy {
		issuers = append(issuers, validate.Issuer{Issuer: cfg.alsoTrust.URL, Keys: &validate.StaticKeys{Set: cfg.alsoTrust.Keys()}})
	}
	v, err := validate.New(validate.Config{
		Issuers:           issuers,
		Audiences:         []string{audience},
		TenantClaim:       "tenant",
		AllowConfirmation: dp != middleware.DPoPOff,
	})
	if err != nil {
		t.Fatalf("validate.New: %v", err)
	}
	srv, err := server.New(server.Config{
		Resource:             audience,
		AuthorizationServers: []string{trusted},
		Validator:            v,
		Scopes:               []string{baseScope},
		DPoP:                 middleware.DPoPConfig{Policy: dp},
		Stateful:             cfg.stateful,
		Public:               cfg.public,
		Lists:                cfg.lists,
		Rules:                libraryRules(cfg),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	e.metaURL = srv.ResourceMetadataURL()
	if cfg.viaProxy {
		e.metaURL = "http://" + pxTS.Listener.Addr().String() + "/.well-known/oauth-protected-resource/mcp"
	}
	mcpTS.Config.Handler = srv
	if cfg.wrapMCP != nil {
		mcpTS.Config.Handler = cfg.wrapMCP(srv)
	}
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)
	return e
}

// libraryRules are the example server's rules: cfg.rules unless the
// proxy applies them.
func libraryRules(cfg envConfig) []middleware.Rule {
	if cfg.viaProxy {
		return nil
	}
	return cfg.rules
}

// token mints an access token for the MCP server directly at the
// authorization server.
func (e *env) token(t *testing.T, subject, tenant string, scopes ...string) string {
	t.Helper()
	tok, err := e.as.IssueToken(subject, tenant, rawClientID, e.mcpURL, scopes)
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

// authorizations returns how many requests reached /authorize.
func (e *env) authorizations() int { return e.asCounts.get("/authorize") }

// codeFetcher returns an auth.AuthorizationCodeFetcher that plays the
// user's browser: it sends the authorization request (adding login_hint,
// if not empty, to choose the user and tenant at the development server),
// stops at the redirect to redirectURI, and returns code, state and iss. An
// error response from the authorization server becomes an error.
func codeFetcher(loginHint string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		q, err := followAuthorize(ctx, args.URL, loginHint)
		if err != nil {
			return nil, err
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// authorizationError is an error authorization response (RFC 6749 §4.1.2.1).
type authorizationError struct{ Code, Description string }

func (e *authorizationError) Error() string {
	return "authorization error: " + e.Code + ": " + e.Description
}

// followAuthorize requests authURL without following redirects and returns
// the query of the redirect to redirectURI.
func followAuthorize(ctx context.Context, authURL, loginHint string) (url.Values, error) {
	if loginHint != "" {
		authURL += "&login_hint=" + url.QueryEscape(loginHint)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("authorize: got %s, want 302: %s", resp.Status, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	if base := strings.SplitN(loc.String(), "?", 2)[0]; base != redirectURI {
		return nil, fmt.Errorf("authorize: redirected to %q, want %q", base, redirectURI)
	}
	q := loc.Query()
	if code := q.Get("error"); code != "" {
		return nil, &authorizationError{code, q.Get("error_description")}
	}
	return q, nil
}

// registration selects how a go-sdk client registers.
type registration int

const (
	viaCIMD registration = iota
	viaDCR
)

func (r registration) String() string { return [...]string{"cimd", "dcr"}[r] }

// sdkClient configures connect.
type sdkClient struct {
	reg       registration
	revision  string
	loginHint string
	// extraScopes are added to the scopes of the first authorization,
	// through the handler's ScopeFilter.
	extraScopes []string
	// base is the transport under the recorder; nil means
	// http.DefaultTransport.
	base http.RoundTripper
	// retries is the transport's MaxRetries (resumption of a stream cut
	// before its answer); zero means none.
	retries int
}

// recorder is an http.RoundTripper under the SDK transport that records
// every request to the MCP server and its answer.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	ex   []exchange
}

// exchange is one recorded request and response.
type exchange struct {
	method, path string
	mcpMethod    string // Mcp-Method header
	mcpName      string // Mcp-Name header
	version      string // MCP-Protocol-Version header
	hadToken     bool
	status       int
	wwwAuth      []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	x := exchange{
		method: req.Method, path: req.URL.Path,
		mcpMethod: req.Header.Get("Mcp-Method"), mcpName: req.Header.Get("Mcp-Name"),
		version:  req.Header.Get("MCP-Protocol-Version"),
		hadToken: req.Header.Get("Authorization") != "",
	}
	if resp != nil {
		x.status = resp.StatusCode
		x.wwwAuth = resp.Header.Values("WWW-Authenticate")
	}
	r.mu.Lock()
	r.ex = append(r.ex, x)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ex)
}

// withStatus returns the recorded exchanges that got status.
func (r *recorder) withStatus(status int) []exchange {
	var out []exchange
	for _, x := range r.exchanges() {
		if x.status == status {
			out = append(out, x)
		}
	}
	return out
}

// connect connects an official MCP Go SDK client to the MCP server with
// OAuth (auth.NewAuthorizationCodeHandler) and returns the session and the
// recorder of its HTTP exchanges with the MCP server.
func (e *env) connect(ctx context.Context, t *testing.T, c sdkClient) (*mcp.ClientSession, *recorder) {
	t.Helper()
	cs, rec, err := e.tryConnect(ctx, c)
	if err != nil {
		t.Fatalf("connect (%s, %s): %v", c.reg, c.revision, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, rec
}

func (e *env) tryConnect(ctx context.Context, c sdkClient) (*mcp.ClientSession, *recorder, error) {
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirectURI,
		AuthorizationCodeFetcher: codeFetcher(c.loginHint),
		Client:                   &http.Client{Timeout: 10 * time.Second},
	}
	switch c.reg {
	case viaCIMD:
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: e.cimdURL}
	case viaDCR:
		hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "mcpguard integration DCR client",
				RedirectURIs: []string{redirectURI},
			},
		}
	}
	if len(c.extraScopes) > 0 {
		extra := c.extraScopes
		hc.ScopeFilter = func(discovered []string) []string {
			out := slices.Clone(discovered)
			for _, s := range extra {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, nil, err
	}
	rec := &recorder{base: http.DefaultTransport}
	if c.base != nil {
		rec.base = c.base
	}
	retries := -1
	if c.retries > 0 {
		retries = c.retries
	}
	tr := &mcp.StreamableClientTransport{
		Endpoint:             e.mcpURL,
		HTTPClient:           &http.Client{Transport: rec, Timeout: 20 * time.Second},
		OAuthHandler:         h,
		MaxRetries:           retries,
		DisableStandaloneSSE: true,
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "mcpguard-integration", Version: "0.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
	})
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: c.revision})
	if err != nil {
		return nil, rec, err
	}
	if got := cs.InitializeResult().ProtocolVersion; got != c.revision {
		cs.Close()
		return nil, rec, fmt.Errorf("negotiated protocol version %q, want %q", got, c.revision)
	}
	return cs, rec, nil
}

// callJSON calls a tool and decodes its structured content into out. It
// fails the test on a protocol error or a tool error.
func callJSON(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s): tool error: %s", name, toolText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("CallTool(%s): structured content %s: %v", name, b, err)
	}
}

// toolText returns the text content of a tool result.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// testContext returns a context bounded by testTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// insufficientScope is the exact 403 challenge of the example server for
// an operation needing scopes.
func (e *env) insufficientScope(scopes ...string) string {
	return `Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") +
		`", resource_metadata="` + e.metaURL + `", error_description="The operation requires additional scope"`
}

// invalidToken is the exact 401 challenge for a rejected token.
func invalidToken(metaURL string) string {
	return `Bearer error="invalid_token", scope="` + baseScope + `", resource_metadata="` + metaURL +
		`", error_description="The access token is invalid"`
}

// noToken is the exact 401 challenge for a request without a token.
func noToken(metaURL string) string {
	return `Bearer scope="` + baseScope + `", resource_metadata="` + metaURL + `"`
}

// callParams returns tools/call parameters.
func callParams(name string, args map[string]any) *mcp.CallToolParams {
	if args == nil {
		args = map[string]any{}
	}
	return &mcp.CallToolParams{Name: name, Arguments: args}
}
