package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/heldport"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// This file holds the helpers of the end-to-end tests of "mcpguard proxy"
// (e2e_*_test.go): the proxy runs through run, the command's entry point,
// from a YAML file, as a user runs it; everything binds 127.0.0.1.

// freeAddr returns a free 127.0.0.1 port. The proxy's resource URL names
// it, so it is chosen before the proxy starts (a port taken between the
// probe and the bind makes the proxy exit, which startProxyCmd reports).
func freeAddr(t *testing.T) string {
	t.Helper()
	return heldport.New(t, 1).Take()
}

// writeFile writes a file of the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertionKeyFile writes a fresh P-256 key (PKCS #8 PEM), for replicas
// that must sign with one key.
func assertionKeyFile(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "assertion-key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
}

// startProxyCmd runs "mcpguard proxy -addr addr -config <cfg> -log-level
// info" (cfg written to a file) with the environment env, waits (at most about 60 s) until its
// /readyz answers 200, and stops it when the test ends, checking it exits
// 0. It returns the proxy's log (one line per decision).
func startProxyCmd(t *testing.T, addr, cfg string, env map[string]string) *lockedBuf {
	t.Helper()
	return startProxyFile(t, addr, writeFile(t, "mcpguard.yaml", cfg), env)
}

// startProxyFile is startProxyCmd with the configuration in cfgFile and
// the flags extra added.
func startProxyFile(t *testing.T, addr, cfgFile string, env map[string]string, extra ...string) *lockedBuf {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuf
	done := make(chan int, 1)
	args := append([]string{"proxy", "-addr", addr, "-config", cfgFile, "-log-level", "info"}, extra...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("mcpguard proxy at %s exited %d:\n%s", addr, code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("mcpguard proxy at %s did not shut down", addr)
		}
	})
	hc := &http.Client{Timeout: 5 * time.Second}
	for range 600 { // at most about 60 s on a loaded machine
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &errOut
			}
		}
		select {
		case code := <-done:
			t.Fatalf("mcpguard proxy at %s exited %d:\n%s", addr, code, errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("mcpguard proxy at %s not ready:\n%s", addr, errOut.String())
	return nil
}

// seenRequest is what the upstream received.
type seenRequest struct {
	header http.Header
	body   []byte
}

// upstream is a go-sdk MCP server trusting only the assertions of the
// proxy at origin (the Go snippet of docs/proxy.md), with a tool whoami
// answering the assertion's subject, recording every request it gets.
type upstream struct {
	url string
	srv *mcp.Server // its tools may change while it serves

	mu   sync.Mutex
	seen []seenRequest
}

func (u *upstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// startUpstream starts the upstream for the proxy at origin, whose JWK Set
// is at origin/.well-known/jwks.json (fetched when the first assertion
// arrives).
func startUpstream(t *testing.T, origin string) *upstream {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	u := &upstream{url: "http://" + ts.Listener.Addr().String() + "/mcp"}
	keys, err := jwks.New(jwks.Config{Issuer: origin, JWKSURL: origin + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	g, err := mcpguard.New(mcpguard.Config{Resource: u.url, Issuers: []string{origin}, Keys: map[string]validate.KeySource{origin: keys}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	u.srv = s
	a.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, ok := gosdk.Principal(req)
		if !ok {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no principal"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.Subject}}}, nil, nil
	})
	h := a.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		u.mu.Lock()
		u.seen = append(u.seen, seenRequest{header: r.Header.Clone(), body: body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(ts.Close)
	return u
}

// capture is one request a client sent and the status it got.
type capture struct {
	method string
	url    string
	header http.Header
	body   []byte
	status int
}

// recorder is an http.RoundTripper recording every request (with its
// body) and its answer's status.
type recorder struct {
	base http.RoundTripper

	mu sync.Mutex
	ex []capture
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := r.base.RoundTrip(req)
	c := capture{method: req.Method, url: req.URL.String(), header: req.Header.Clone(), body: body}
	if resp != nil {
		c.status = resp.StatusCode
	}
	r.mu.Lock()
	r.ex = append(r.ex, c)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) all() []capture {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ex)
}

// codeAuthorizer is a client.Authorizer playing a user whose browser
// the development authorization server approves at once: the
// authorization code flow with PKCE and resource for a pre-registered
// public client, the token request with a DPoP proof when the transport
// has a key (RFC 9449 §5).
type codeAuthorizer struct {
	clientID, redirectURI, loginHint string
}

func (a codeAuthorizer) Authorize(ctx context.Context, req client.AuthorizeRequest) (oauth2.TokenSource, error) {
	if req.ResourceMetadata == nil || len(req.ResourceMetadata.AuthorizationServers) == 0 {
		return nil, errors.New("no authorization server in the metadata")
	}
	hc := &http.Client{Timeout: 20 * time.Second}
	if req.DPoP != nil {
		hc.Transport = req.DPoP.TokenTransport(nil)
	}
	md, err := asmeta.Discover(ctx, hc, req.ResourceMetadata.AuthorizationServers[0])
	if err != nil {
		return nil, err
	}
	cfg := oauth2.Config{
		ClientID:    a.clientID,
		Endpoint:    oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: a.redirectURI,
		Scopes:      req.Scopes,
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", req.Resource),
		oauth2.SetAuthURLParam("login_hint", a.loginHint))
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	noRedirect := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(hreq)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), a.redirectURI+"?") {
		return nil, fmt.Errorf("authorize: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("state") != state || q.Get("code") == "" {
		return nil, fmt.Errorf("authorize: redirected to %q", loc)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", req.Resource))
	if err != nil {
		return nil, err
	}
	return oauth2.StaticTokenSource(tok), nil
}

// replay sends a captured request again, byte for byte, to target (the
// same URL or another replica's), and returns the answer's status and
// WWW-Authenticate values.
func replay(t *testing.T, c capture, target string) (int, []string) {
	t.Helper()
	req, err := http.NewRequest(c.method, target, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = c.header.Clone()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Values("WWW-Authenticate")
}
