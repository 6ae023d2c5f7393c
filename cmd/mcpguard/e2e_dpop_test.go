package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/client"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/internal/redistest"
)

// e2eClientID and e2eRedirect are the development authorization server's
// pre-registered public client of the end-to-end tests.
const (
	e2eClientID = "e2e-client"
	e2eRedirect = "http://127.0.0.1:3000/callback"
)

// startDevAS starts the development authorization server for resources,
// approving everyone (login_hint user@tenant), with the pre-registered
// client e2eClientID.
func startDevAS(t *testing.T, resources ...string) (*devmint.Server, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	issuer := "http://" + ts.Listener.Addr().String()
	as, err := devmint.New(devas.Config{
		Issuer: issuer, Resources: resources, Scopes: []string{"mcp:tools"},
		AutoApprove: true, AllowLoginHint: true,
		Clients: []cimd.Client{{Document: cimd.Document{
			ClientID: e2eClientID, RedirectURIs: []string{e2eRedirect}, TokenEndpointAuthMethod: "none", ApplicationType: "native",
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = as
	ts.Start()
	t.Cleanup(ts.Close)
	return as, issuer
}

// TestDPoPThroughProxy (issue 23 item 8, DPoP replay): the official go-sdk
// client over mcpguard's client transport with a DPoP key, against the
// development authorization server issuing DPoP-bound tokens, through two
// "mcpguard proxy" replicas (one YAML file, DPoP required) sharing one
// real redis-server, to a go-sdk upstream verifying the proxy's
// assertion. The client's first request gets the DPoP-only 401, its
// token request carries a proof (token_type DPoP), its tool call
// succeeds; a proof the proxy accepted, sent again byte for byte, is
// refused by the same replica and by the other one, while a fresh proof
// of the same key and token is accepted by the other one. The upstream
// never sees the client's token or proof.
func TestDPoPThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and two proxies")
	}
	rd := redistest.Start(t)
	addr1, addr2 := freeAddr(t), freeAddr(t)
	origin := "http://" + addr1
	resource := origin + "/mcp"
	_, issuer := startDevAS(t, resource)
	up := startUpstream(t, origin)
	cfg := fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%s]
    scopes: [mcp:tools]
    dpop: required
assertion:
  key_file: %s
redis:
  addr: %s
`, resource, up.url, issuer, assertionKeyFile(t), rd.Addr)
	log1 := startProxyCmd(t, addr1, cfg, nil)
	log2 := startProxyCmd(t, addr2, cfg, nil) // the second replica: same file, same public resource URL

	key, err := client.NewDPoPKey(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{base: http.DefaultTransport}
	tr, err := client.New(client.Config{Resource: resource, DPoP: key, Base: rec,
		Authorizer: codeAuthorizer{clientID: e2eClientID, redirectURI: e2eRedirect, loginHint: "alice@tenant-a"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-dpop", Version: "0"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource,
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	for i := range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if len(res.Content) != 1 || res.IsError || res.Content[0].(*mcp.TextContent).Text != "alice" {
			t.Fatalf("call %d: whoami = %+v", i+1, res)
		}
	}

	// What the client sent: a DPoP-only 401 first, then every MCP request
	// with "Authorization: DPoP" and one proof; the accepted tool calls
	// are the proofs to replay.
	ex := rec.all()
	if len(ex) == 0 || ex[0].status != 401 {
		t.Fatalf("first exchange %+v, want a 401", ex)
	}
	var calls []capture
	for _, c := range ex[1:] {
		if !strings.HasPrefix(c.header.Get("Authorization"), "DPoP ") || len(c.header.Values("DPoP")) != 1 {
			t.Errorf("%s %s without a DPoP token and one proof: %q", c.method, c.url, c.header)
		}
		if c.status == 200 && strings.Contains(string(c.body), `"tools/call"`) {
			calls = append(calls, c)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("accepted tools/call requests = %d, want 2", len(calls))
	}
	tok := strings.TrimPrefix(calls[0].header.Get("Authorization"), "DPoP ")
	// The token is bound to the client's key (cnf.jkt, RFC 9449 §6.1).
	var claims struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	if parts := strings.Split(tok, "."); len(parts) != 3 {
		t.Fatalf("token %q is no JWS", tok)
	} else if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(payload, &claims) != nil || claims.Cnf.JKT != key.Thumbprint() {
		t.Errorf("token cnf.jkt = %q, want the key's %q", claims.Cnf.JKT, key.Thumbprint())
	}

	// Replays: the same replica, then the other one (its replay cache is
	// the shared Redis), each refused with the same challenge.
	// The client sees the challenge of every invalid proof; the replica's
	// decision log names the replay.
	wantCh := []string{`DPoP error="invalid_dpop_proof", scope="mcp:tools", resource_metadata="` + origin +
		`/.well-known/oauth-protected-resource/mcp", error_description="The DPoP proof is invalid", algs="ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"`}
	for _, r := range []struct {
		name   string
		c      capture
		target string
		log    *lockedBuf
	}{
		{"replica 1", calls[0], resource, log1},
		{"replica 2", calls[1], "http://" + addr2 + "/mcp", log2},
	} {
		status, ch := replay(t, r.c, r.target)
		if status != 401 || !slices.Equal(ch, wantCh) {
			t.Errorf("proof replayed at %s: %d %q, want 401 %q", r.name, status, ch, wantCh)
		}
		if n := strings.Count(r.log.String(), `"reason":"dpop_replay"`); n != 1 {
			t.Errorf("%s logged %d dpop_replay decisions, want 1:\n%s", r.name, n, r.log.String())
		}
	}
	// A fresh proof of the same key and token is accepted by replica 2:
	// the replays were refused as replays, not for the token.
	fresh := calls[1]
	fresh.header = fresh.header.Clone()
	proof, err := key.Proof("POST", resource, tok)
	if err != nil {
		t.Fatal(err)
	}
	fresh.header.Set("DPoP", proof)
	if status, ch := replay(t, fresh, "http://"+addr2+"/mcp"); status != 200 {
		t.Errorf("fresh proof at replica 2: %d %q, want 200", status, ch)
	}

	// The upstream got the proxy's assertion, never the client's token or
	// proof, and none of the replays.
	seen := up.requests()
	for _, r := range seen {
		if a := r.header.Get("Authorization"); strings.Contains(a, tok) || !strings.HasPrefix(a, "Bearer ") || r.header.Get("DPoP") != "" {
			t.Errorf("the upstream got Authorization %q, DPoP %q", a, r.header.Get("DPoP"))
		}
	}
	var upCalls int
	for _, r := range seen {
		if strings.Contains(string(r.body), `"tools/call"`) {
			upCalls++
		}
	}
	if upCalls != 3 {
		t.Errorf("tools/call requests at the upstream = %d, want 3 (two calls and the fresh proof)", upCalls)
	}
}
