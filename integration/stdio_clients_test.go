package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// envScope is the scope the step-up tool of newStdioClientsEnv's route
// needs: calling it steps up.
const envScope = "env:read"

// newStdioClientsEnv is devas (DCR, auto-approve) and mcpguard proxy with
// one stdio route running s, whose tool stepUp needs envScope on top of
// the base scope.
func newStdioClientsEnv(t *testing.T, s proxy.Stdio, stepUp string) (resource, issuer string) {
	t.Helper()
	p, issuer := newDevProxy(t, []string{baseScope, envScope}, true, func(resource, issuer string) proxy.Route {
		return proxy.Route{Resource: resource, Issuers: []string{issuer}, Scopes: []string{baseScope},
			Operations: proxy.Operations{Tools: map[string][]string{stepUp: {envScope}}}, Stdio: s}
	})
	return p.resource, issuer
}

// TestStdioTypeScriptClients: the TypeScript SDK clients (v1; v2 in
// 2025-11-25 and in the stateless 2026-07-28) through mcpguard proxy in
// front of stdio servers, the reference everything server and the Python
// server: 401, metadata, dynamic registration, token, the protected tool
// refused with 403 insufficient_scope, step-up, and the call reaching the
// user's child (which names its user).
func TestStdioTypeScriptClients(t *testing.T) {
	node := requireNode(t)
	requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join(upstreamsDir, "python_stdio.py"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(debianPython); err != nil && os.Getenv("CI") != "" {
		t.Fatalf("%s missing (CI is set, so this test may not skip)", debianPython)
	}
	for _, srv := range []struct {
		name, tool, want string
		stdio            proxy.Stdio
	}{
		{"everything", "get-env", "MCPGUARD_USER_SUBJECT", proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}},
		{"python", "whoami", `"sub"`, proxy.Stdio{Command: []string{debianPython, script}, Dir: filepath.Join(t.TempDir(), "{user}")}},
	} {
		t.Run(srv.name, func(t *testing.T) {
			if srv.name == "python" {
				if _, err := os.Stat(debianPython); err != nil {
					t.Skipf("%s missing", debianPython)
				}
			}
			resource, issuer := newStdioClientsEnv(t, srv.stdio, srv.tool)
			for _, c := range tsClients {
				t.Run(c.sdk+"/"+c.revision, func(t *testing.T) {
					checkStdioClient(t, node, c, resource, issuer, srv.tool, srv.want)
				})
			}
		})
	}
}

// checkStdioClient runs one TypeScript client through the whole flow
// with the one call tool, which steps up, and checks each step.
func checkStdioClient(t *testing.T, node string, c tsClient, resource, issuer, tool, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	r := runDriver(ctx, t, node, "--sdk", c.sdk, "--revision", c.revision, "--url", resource, "--tool", tool)
	if !r.OK || r.Call == nil || r.Call.IsError || !strings.Contains(r.Call.Text, want) {
		t.Fatalf("%s: ok %v error %q call %+v", tool, r.OK, r.Error, r.Call)
	}
	if r.ProtocolVersion != c.revision {
		t.Errorf("negotiated %q, want %s", r.ProtocolVersion, c.revision)
	}
	steps := map[string]bool{}
	for _, e := range r.Trace {
		switch {
		case e.Method == "POST" && e.URL == resource && e.Status == 401:
			steps["401"] = true
		case e.Method == "POST" && strings.HasPrefix(e.URL, issuer+"/reg") && e.Status == 201:
			steps["registration"] = true
		case e.Method == "POST" && e.URL == resource && e.Status == 403 &&
			strings.Contains(e.WWWAuthenticate, `error="insufficient_scope"`) && strings.Contains(e.WWWAuthenticate, `scope="`+baseScope+" "+envScope+`"`):
			steps["403"] = true
		}
	}
	for _, s := range []string{"401", "registration", "403"} {
		if !steps[s] {
			t.Errorf("no %s in the trace: %+v", s, r.Trace)
		}
	}
	if len(r.Tokens) != 2 || len(r.Authorizations) != 2 || !strings.Contains(r.Authorizations[1].Scope, envScope) {
		t.Errorf("authorizations %+v tokens %d, want the first and one step-up to %s", r.Authorizations, len(r.Tokens), envScope)
	}
}

// TestStdioGoSDKClient: the official Go SDK client (its OAuth handler,
// dynamic registration) in both revisions through mcpguard proxy in front
// of the everything server on stdio: 401, registration, token, get-env
// refused with 403 insufficient_scope, the handler's step-up, and the
// retried call reaching the user's child.
func TestStdioGoSDKClient(t *testing.T) {
	node := requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	resource, issuer := newStdioClientsEnv(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}}, "get-env")
	e := &env{issuer: issuer, mcpURL: resource}
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			ctx := testContext(t)
			cs, rec := e.connect(ctx, t, sdkClient{reg: viaDCR, revision: rev})
			res, err := cs.CallTool(ctx, callParams("get-env", nil))
			if err != nil || res.IsError || !strings.Contains(toolText(res), "MCPGUARD_USER_SUBJECT") {
				t.Fatalf("get-env: %v %+v", err, res)
			}
			if n := len(rec.withStatus(401)); n == 0 {
				t.Errorf("no 401 before registration")
			}
			forbidden := rec.withStatus(403)
			if len(forbidden) != 1 || len(forbidden[0].wwwAuth) != 1 || !strings.Contains(forbidden[0].wwwAuth[0], `error="insufficient_scope"`) ||
				!strings.Contains(forbidden[0].wwwAuth[0], `scope="`+baseScope+" "+envScope+`"`) {
				t.Errorf("403 answers = %+v, want one step-up challenge for %s", forbidden, envScope)
			}
		})
	}
}

// TestStdioClientsWithoutDelete: the TypeScript SDK's v1 client closes
// its connections and sends no DELETE, so every run of it leaves its
// session and child behind until the idle timeout. Run more times than
// max_per_user, one user's runs each get a session: the user's least
// recently used idle child makes room (before, the run past the bound got
// 503 for the idle timeout, 15 minutes by default).
func TestStdioClientsWithoutDelete(t *testing.T) {
	node := requireNode(t)
	requireUpstreamsNode(t)
	t.Parallel()
	entry, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	const perUser = 2
	resource, _ := newStdioClientsEnv(t, proxy.Stdio{Command: []string{node, entry, "stdio"}, PassEnv: []string{"PATH", "HOME"}, MaxPerUser: perUser}, "get-env")
	for i := range perUser + 2 {
		ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
		r := runDriver(ctx, t, node, "--sdk", "v1", "--revision", rev20251125, "--url", resource, "--tool", "get-env")
		cancel()
		if !r.OK || r.Call == nil || r.Call.IsError || !strings.Contains(r.Call.Text, "MCPGUARD_USER_SUBJECT") {
			t.Fatalf("run %d of the v1 client (max_per_user %d): ok %v error %q call %+v", i+1, perUser, r.OK, r.Error, r.Call)
		}
	}
}
