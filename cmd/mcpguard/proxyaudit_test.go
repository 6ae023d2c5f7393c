package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// lockedBuf is a goroutine-safe buffer for a subcommand's output.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAuditThroughProxy runs "mcpguard proxy" from a YAML config in front
// of a stateful go-sdk upstream that verifies the proxy's assertion with
// mcpguard, then "mcpguard audit -token -token2 -upstream -assertion-key"
// against it: no MUST check fails, and the checks that need both tokens
// and the upstream (session binding, step-up, tenant from the token, every
// PROXY-* check) pass rather than being skipped.
func TestAuditThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole audit (about 50 requests, 50 ms apart)")
	}
	proxyAddr := freeAddr(t)
	origin := "http://" + proxyAddr
	resource := origin + "/mcp"

	asTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{"mcp:tools", "mcp:admin"}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	// The upstream: the go-sdk, stateful, trusting only the proxy's
	// assertions for itself (the Go snippet of docs/proxy.md).
	upTS := httptest.NewUnstartedServer(nil)
	upstream := "http://" + upTS.Listener.Addr().String() + "/mcp"
	keys, err := jwks.New(jwks.Config{Issuer: origin, JWKSURL: origin + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	g, err := mcpguard.New(mcpguard.Config{Resource: upstream, Issuers: []string{origin}, Keys: map[string]validate.KeySource{origin: keys},
		Validate: validate.Config{TenantClaim: "tenant"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	a.Install(s)
	ok := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, ok)
	mcp.AddTool(s, &mcp.Tool{Name: "admin_only"}, ok)
	// A read-only tool with a tenant argument, answering from the tenant
	// of the proxy's assertion only (TENANT-FROM-TOKEN).
	type listArgs struct {
		Tenant string `json:"tenant,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "notes_list", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ listArgs) (*mcp.CallToolResult, any, error) {
			p, found := gosdk.Principal(req)
			if !found || p.Tenant == "" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no tenant"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes of " + p.Tenant}}}, nil, nil
		})
	upTS.Config.Handler = a.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	upTS.Start()
	t.Cleanup(upTS.Close)

	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "assertion-key.pem")
	cfgFile := filepath.Join(dir, "mcpguard.yaml")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%s]
    scopes: [mcp:tools]
    operations:
      tools: {admin_only: [mcp:admin]}
    validation:
      tenant_claim: tenant
assertion:
  key_file: %s
`, resource, upstream, issuer, keyFile)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var pxOut, pxErr lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "-addr", proxyAddr, "-config", cfgFile, "-log-level", "warn"}, func(string) string { return "" }, &pxOut, &pxErr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("mcpguard proxy exited %d:\n%s", code, pxErr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("mcpguard proxy did not shut down")
		}
	})
	ready := false
	for range 300 { // at most about 30 s
		resp, err := http.Get(origin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = true
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("mcpguard proxy exited %d:\n%s", code, pxErr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !ready {
		t.Fatalf("mcpguard proxy not ready:\n%s", pxErr.String())
	}

	tok := func(sub, tenant string) string {
		tk, err := as.IssueToken(sub, tenant, "audit-cli", resource, []string{"mcp:tools"})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	var out, errOut lockedBuf
	code := run(context.Background(), []string{"audit", "-json",
		"-token", tok("alice", "tenant-a"), "-token2", tok("bob", "tenant-b"),
		"-upstream", upstream, "-assertion-key", keyFile, resource,
	}, func(string) string { return "" }, &out, &errOut)
	var rep struct {
		Credentials string `json:"credentials"`
		Results     []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Verdict  string `json:"verdict"`
			Detail   string `json:"detail"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("audit exited %d, report: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	verdict := map[string]string{}
	for _, r := range rep.Results {
		verdict[r.ID] = r.Verdict
		if r.Verdict == "fail" && r.Severity == "MUST" {
			t.Errorf("MUST failure %s: %s", r.ID, r.Detail)
		}
		if testing.Verbose() && r.Verdict != "pass" {
			t.Logf("%s %s %s: %s", r.ID, r.Severity, r.Verdict, r.Detail)
		}
	}
	if code != 0 {
		t.Errorf("mcpguard audit exited %d, want 0:\n%s", code, errOut.String())
	}
	if rep.Credentials != "token+token2" {
		t.Errorf("credentials = %q", rep.Credentials)
	}
	for _, id := range []string{"SESSION-BINDING", "STEP-UP-BOUND", "TENANT-FROM-TOKEN", "PROXY-UPSTREAM-NO-IDENTITY", "PROXY-UPSTREAM-CLIENT-TOKEN",
		"PROXY-UPSTREAM-FORGED-ASSERTION", "PROXY-UPSTREAM-AUDIENCE", "PROXY-METADATA-PUBLIC-URL"} {
		if verdict[id] != "pass" {
			t.Errorf("%s = %q, want pass", id, verdict[id])
		}
	}
}
