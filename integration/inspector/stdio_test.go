package inspector

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/proxy"
)

// TestInspectorCLIStdio: the Inspector CLI (least privilege: its server
// entry asks for the base scope) through mcpguard proxy in front of the
// reference everything server on stdio, in both eras: registration,
// token, get-env refused with 403 insufficient_scope, the CLI's step-up,
// and the protected call reaching the user's child.
func TestInspectorCLIStdio(t *testing.T) {
	node, inspector := requireInspector(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join("..", "upstreams", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing (CI is set, so this test may not skip): npm ci in integration/upstreams", entry)
		}
		t.Skipf("%s missing", entry)
	}
	const envScope = "env:read"
	asTS := httptest.NewUnstartedServer(nil)
	pxTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	resource := "http://" + pxTS.Listener.Addr().String() + "/mcp"
	as, err := devas.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{baseScope, envScope}, AutoApprove: true, EnableDCR: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	px, err := proxy.New(proxy.Config{Routes: []proxy.Route{{Resource: resource, Issuers: []string{issuer}, Scopes: []string{baseScope},
		Operations: proxy.Operations{Tools: map[string][]string{"get-env": {envScope}}},
		Stdio:      proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	pxTS.Config.Handler = px
	pxTS.Start()
	t.Cleanup(pxTS.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := px.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			cli := newInspectorCLI(t, node, inspector, resource, baseScope)
			r := cli.run(t, era, "--method", "tools/call", "--tool-name", "get-env")
			if r.exit != 0 || !strings.Contains(r.stdout, "MCPGUARD_USER_SUBJECT") || strings.Contains(r.stdout, `"isError":true`) ||
				!strings.Contains(r.stderr, "This operation needs additional scope: "+envScope) {
				t.Errorf("get-env: exit %d\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
			}
			if want := []string{baseScope, baseScope + " " + envScope}; !slices.Equal(r.scopes, want) {
				t.Errorf("authorizations with scopes %q, want %q", r.scopes, want)
			}
		})
	}
}
