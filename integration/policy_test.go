package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// TestProxyTenantArgument: a TypeScript SDK server whose tenant_notes
// tool trusts its "tenant" argument, behind mcpguard proxy with
// policy.tenant_argument: tenant, never sees another tenant's value: not
// from the TypeScript SDK client, and not from raw requests spelling the
// argument another way (a case variant, an escape, a duplicate member,
// another type). Each is refused by the proxy; the caller's own tenant
// passes.
func TestProxyTenantArgument(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	p := newProxiedWith(t, envConfig{policy: proxy.Policy{TenantArgument: "tenant"}}, func(jwksURL, issuer string) string {
		return startProc(t, upstreamsDir, nil, node, "ts-upstream.mjs", "--jwks", jwksURL, "--issuer", issuer)
	})
	ctx := testContext(t)
	tok := p.token(t, "alice") // tenant "acme"

	// The TypeScript SDK client.
	args := `[{"tenant":"acme"},{"tenant":"globex"},{"tenant":"ACME"},{"Tenant":"globex"},{"tenant":"acme","TENANT":"globex"}]`
	out := runUpstreamsNode(ctx, t, node, "tenant-client.mjs", "--url", p.resource, "--token", tok, "--args", args)
	var results []struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("tenant-client output %s: %v", out, err)
	}
	if len(results) != 5 {
		t.Fatalf("results = %+v", results)
	}
	if results[0].IsError || results[0].Text != "notes of acme" {
		t.Errorf("own tenant: %+v", results[0])
	}
	for i, r := range results[1:] {
		if r.Error == "" || strings.Contains(r.Text, "globex") {
			t.Errorf("call %d (%s): %+v, want refused by the proxy", i+1, args, r)
		}
	}

	// Raw requests with other spellings, in a session of their own.
	sid := rawInitialize(ctx, t, p.resource, tok)
	for _, tc := range []struct {
		name, arguments string
		status          int
	}{
		{"other", `{"tenant":"globex"}`, 403},
		{"escaped name", `{"\u0074enant":"globex"}`, 403},
		{"duplicate", `{"tenant":"acme","tenant":"globex"}`, 400},
		{"case variant", `{"Tenant":"globex"}`, 400},
		{"number", `{"tenant":7}`, 403},
		{"nul", `{"tenant":"acme\u0000globex"}`, 403},
		{"own", `{"tenant":"acme"}`, 200},
	} {
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tenant_notes","arguments":` + tc.arguments + `}}`
		if got := rawCall(ctx, t, p.resource, tok, sid, body); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
	}

	// Another tenant's user may use its own tenant.
	other, err := p.as.IssueToken("bob", "globex", "proxied-client", p.resource, []string{baseScope})
	if err != nil {
		t.Fatal(err)
	}
	out = runUpstreamsNode(ctx, t, node, "tenant-client.mjs", "--url", p.resource, "--token", other, "--args", `[{"tenant":"acme"},{"tenant":"globex"}]`)
	if err := json.Unmarshal(out, &results); err != nil || len(results) != 2 || results[0].Error == "" || results[1].Text != "notes of globex" {
		t.Errorf("bob: %s", out)
	}

	// What the server saw: only each caller's own tenant.
	cs := p.connect(ctx, t, tok)
	var seen []string
	if err := json.Unmarshal([]byte(callText(ctx, t, cs, "seen_tenants", nil)), &seen); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"acme": true, "globex": true}
	acme := 0
	for _, s := range seen {
		if !want[s] {
			t.Errorf("the server saw tenant %q", s)
		}
		if s == "acme" {
			acme++
		}
	}
	if acme != 2 || len(seen) != 3 {
		t.Errorf("the server saw %q, want acme twice (TS client, raw) and globex once (bob)", seen)
	}
}

// rawInitialize opens a session at url with tok and returns its ID.
func rawInitialize(ctx context.Context, t *testing.T, url, tok string) string {
	t.Helper()
	resp := rawMCP(ctx, t, url, tok, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	rawMCP(ctx, t, url, tok, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// rawCall posts body in session sid and returns the status.
func rawCall(ctx context.Context, t *testing.T, url, tok, sid, body string) int {
	t.Helper()
	return rawMCP(ctx, t, url, tok, sid, body).StatusCode
}

func rawMCP(ctx context.Context, t *testing.T, url, tok, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// runUpstreamsNode runs script of integration/upstreams and returns its
// standard output.
func runUpstreamsNode(ctx context.Context, t *testing.T, node, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = upstreamsDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}
