// Command client is the MCP conformance suite's client under test for
// mcpguard's client side: the suite (integration/conformance, pinned in
// package-lock.json) starts it with `--command` for every auth/* client
// scenario, with the MCP server's URL as its argument and the scenario in
// MCP_CONFORMANCE_SCENARIO (its data in MCP_CONFORMANCE_CONTEXT).
//
// It connects with the go-sdk client over client.Transport, which reads
// the challenges and the protected-resource metadata, and an Authorizer:
// client.ClientCredentials for the client credentials extension's
// scenarios, client.IDJAG for enterprise-managed authorization (the
// scenario's ID token exchanged at its IdP), client.WorkloadIdentity for
// workload identity federation (its valid_jwt), and otherwise a small
// authorization code flow with PKCE on
// golang.org/x/oauth2 and asmeta (authorization-server discovery, pre-
// registered, CIMD or dynamic registration per issuer, RFC 9207 iss
// checks). The suite's servers run on loopback, so every fetch goes
// through asmeta's guarded client with loopback allowed.
//
// It is a test program, not a public command: the authorization code flow
// here "opens the browser" by following the suite's immediate redirect.
package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// The suite's fixed values (examples/clients/typescript in the suite).
const (
	redirectURL = "http://localhost:3000/callback"
	cimdURL     = "https://conformance-test.local/client-metadata.json"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) != 2 {
		log.Fatal("usage: client <server-url> (MCP_CONFORMANCE_SCENARIO set)")
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := strictjson.Unmarshal([]byte(s), &sc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], scenario, sc); err != nil {
		log.Fatalf("%s: %v", scenario, err)
	}
}

func str(sc map[string]any, k string) string { s, _ := sc[k].(string); return s }

func run(ctx context.Context, serverURL, scenario string, sc map[string]any) error {
	loopback := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	var authz client.Authorizer
	switch scenario {
	case "auth/client-credentials-basic":
		cc, err := client.NewClientCredentials(client.ClientCredentialsConfig{
			ClientID: str(sc, "client_id"), ClientSecret: str(sc, "client_secret"),
			AnyIssuer: true, DiscoveryHTTPClient: loopback,
		})
		if err != nil {
			return err
		}
		authz = cc
	case "auth/client-credentials-jwt":
		key, err := parseKey(str(sc, "private_key_pem"))
		if err != nil {
			return err
		}
		cc, err := client.NewClientCredentials(client.ClientCredentialsConfig{
			ClientID: str(sc, "client_id"), PrivateKey: key, SigningAlgorithm: str(sc, "signing_algorithm"),
			AnyIssuer: true, DiscoveryHTTPClient: loopback,
		})
		if err != nil {
			return err
		}
		authz = cc
	case "auth/enterprise-managed-authorization":
		idToken := str(sc, "idp_id_token")
		a, err := client.NewIDJAG(client.IDJAGConfig{
			Client: client.ClientCredentialsConfig{
				ClientID: str(sc, "client_id"), ClientSecret: str(sc, "client_secret"),
				AnyIssuer: true, DiscoveryHTTPClient: loopback,
			},
			IdPTokenURL: str(sc, "idp_token_endpoint"), IdPClientID: str(sc, "idp_client_id"),
			IdentityAssertion: func(context.Context) (string, error) { return idToken, nil },
		})
		if err != nil {
			return err
		}
		authz = a
	case "auth/wif-jwt-bearer":
		jwt := str(sc, "valid_jwt")
		a, err := client.NewWorkloadIdentity(client.WorkloadIdentityConfig{
			Token:     func(context.Context) (string, error) { return jwt, nil },
			AnyIssuer: true, DiscoveryHTTPClient: loopback,
		})
		if err != nil {
			return err
		}
		authz = a
	default:
		authz = &codeFlow{
			hc:       loopback,
			clientID: str(sc, "client_id"), secret: str(sc, "client_secret"),
			native: os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION") >= "2026",
			regs:   map[string]registration{},
		}
	}
	cfg := client.Config{Resource: serverURL, Authorizer: authz, CrossOriginHTTPClient: loopback}
	if strings.HasPrefix(scenario, "auth/dpop") {
		k, err := client.NewDPoPKey(nil, nil)
		if err != nil {
			return err
		}
		cfg.DPoP = k
	}
	tr, err := client.New(cfg)
	if err != nil {
		return err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpguard-conformance-client", Version: "1.0.0"}, nil)
	session, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serverURL, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = session.Close() }()
	if _, err := session.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	return nil
}

// parseKey reads a PKCS #8 PEM private key.
func parseKey(s string) (crypto.Signer, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil, errors.New("private_key_pem: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private_key_pem: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private_key_pem: %T is not a signer", k)
	}
	return signer, nil
}

// registration is a client registration at one authorization server.
type registration struct{ id, secret, method string }

// codeFlow is an authorization code flow with PKCE (OAuth 2.1 §4.1, MCP
// §Authorization Code Protection) on x/oauth2.
type codeFlow struct {
	hc               *http.Client
	clientID, secret string // pre-registered, from the scenario context
	native           bool   // send application_type (MCP 2026-07-28, SEP-837)

	mu   sync.Mutex
	regs map[string]registration // by issuer: never presented to another server (SEP-2352)
}

func (a *codeFlow) Authorize(ctx context.Context, req client.AuthorizeRequest) (oauth2.TokenSource, error) {
	issuer := req.ResourceMetadata.AuthorizationServers[0]
	md, err := asmeta.Discover(ctx, a.hc, issuer) // RFC 8414 §3.3: the issuer must match
	if err != nil {
		return nil, err
	}
	if !slices.Contains(md.CodeChallengeMethodsSupported, "S256") {
		return nil, errors.New("the authorization server does not support PKCE S256") // MCP: clients MUST refuse
	}
	reg, err := a.registration(ctx, issuer, md, req.AuthorizationServersChanged)
	if err != nil {
		return nil, err
	}
	scopes := slices.Clone(req.Scopes)
	// MCP 2026-07-28 §Refresh Tokens: a client that wants a refresh token
	// may add offline_access when the authorization server lists it.
	if slices.Contains(md.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	conf := &oauth2.Config{
		ClientID: reg.id, ClientSecret: reg.secret, RedirectURL: redirectURL, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}
	switch reg.method {
	case "client_secret_basic":
		conf.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	case "none":
		conf.ClientSecret = ""
	}
	verifier, state := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	resource := oauth2.SetAuthURLParam("resource", req.Resource)
	code, err := a.authorizeCode(ctx, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource), state, md)
	if err != nil {
		return nil, err
	}
	hc := a.hc
	if req.DPoP != nil {
		h := *hc
		h.Transport = req.DPoP.TokenTransport(hc.Transport)
		hc = &h
	}
	tctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, hc)
	tok, err := conf.Exchange(tctx, code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	return conf.TokenSource(tctx, tok), nil
}

// registration returns the client's registration at issuer: the
// pre-registered one, a Client ID Metadata Document URL when the server
// supports them, or a new dynamic registration (RFC 7591), made again
// when the resource moved to another server.
func (a *codeFlow) registration(ctx context.Context, issuer string, md *asmeta.Metadata, changed bool) (registration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.regs[issuer]; ok && !changed {
		return r, nil
	}
	var r registration
	switch {
	case a.clientID != "" && !changed:
		r = registration{id: a.clientID, secret: a.secret, method: secretMethod(md)}
	case md.ClientIDMetadataDocumentSupported:
		r = registration{id: cimdURL, method: "none"}
	case md.RegistrationEndpoint != "":
		var err error
		if r, err = a.register(ctx, md); err != nil {
			return registration{}, err
		}
	default:
		return registration{}, errors.New("no way to register with the authorization server")
	}
	a.regs[issuer] = r
	return r, nil
}

// secretMethod is the token endpoint authentication a confidential client
// uses with md.
func secretMethod(md *asmeta.Metadata) string {
	for _, m := range md.TokenEndpointAuthMethodsSupported {
		if m == "client_secret_basic" || m == "client_secret_post" || m == "none" {
			return m
		}
	}
	return "client_secret_basic" // RFC 8414 §2 default
}

// register performs an RFC 7591 dynamic client registration.
func (a *codeFlow) register(ctx context.Context, md *asmeta.Metadata) (registration, error) {
	method := secretMethod(md)
	body := map[string]any{
		"client_name":                "mcpguard conformance client",
		"redirect_uris":              []string{redirectURL},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	}
	if a.native {
		body["application_type"] = "native"
	}
	b, _ := json.Marshal(body)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, strings.NewReader(string(b)))
	if err != nil {
		return registration{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(hreq)
	if err != nil {
		return registration{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return registration{}, fmt.Errorf("registration: status %d", resp.StatusCode)
	}
	var out struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err == nil {
		err = strictjson.Unmarshal(raw, &out)
	}
	if err != nil || out.ClientID == "" {
		return registration{}, fmt.Errorf("registration: bad response (%v)", err)
	}
	if out.TokenEndpointAuthMethod != "" {
		method = out.TokenEndpointAuthMethod
	}
	return registration{id: out.ClientID, secret: out.ClientSecret, method: method}, nil
}

// authorizeCode "opens the browser": it requests authURL, whose answer in
// the suite is an immediate redirect to the callback, and returns the code
// after the state and RFC 9207 iss checks.
func (a *codeFlow) authorizeCode(ctx context.Context, authURL, state string, md *asmeta.Metadata) (string, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := a.hc.Do(hreq) // the guarded client follows no redirect
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode/100 != 3 {
		return "", fmt.Errorf("authorization: status %d without a redirect", resp.StatusCode)
	}
	q := loc.Query()
	if q.Get("state") != state {
		return "", errors.New("authorization: state mismatch")
	}
	// RFC 9207 §2.4 (MCP 2026-07-28, SEP-2468): a present iss must equal
	// the issuer by simple string comparison; when the server advertises
	// it, it must be present.
	if q.Has("iss") {
		if q.Get("iss") != md.Issuer {
			return "", errors.New("authorization: iss does not name the authorization server")
		}
	} else if md.AuthorizationResponseISSParameterSupported {
		return "", errors.New("authorization: iss missing though the server advertises it")
	}
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("authorization: error %q", e)
	}
	code := q.Get("code")
	if code == "" {
		return "", errors.New("authorization: no code")
	}
	return code, nil
}
