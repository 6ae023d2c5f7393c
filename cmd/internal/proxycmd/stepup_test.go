package proxycmd

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRun runs the command with o until the test ends and returns what
// it reported once serving, and its stderr.
func startRun(t *testing.T, o options, getenv func(string) string) (started, *syncBuf) {
	t.Helper()
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuf{}
	startedc := make(chan started, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, getenv, &syncBuf{}, stderr, func(s started) { startedc <- s }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run after cancel: %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("no shutdown")
		}
	})
	select {
	case st := <-startedc:
		return st, stderr
	case err := <-done:
		done <- err
		t.Fatalf("run: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not started")
	}
	return started{}, nil
}

// callTool posts a tools/call of name with tok and returns the status and
// the WWW-Authenticate header.
func callTool(t *testing.T, resource, tok, name string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestToolScopeStepUp: one command, -dev-as with -tool-scope ping=tools:ping,
// gives a token with the base scope a 403 insufficient_scope naming
// tools:ping for the tool; the embedded authorization server offers that
// scope (scopes_supported), and a token with it calls the tool.
func TestToolScopeStepUp(t *testing.T) {
	upstream, _ := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-upstream", upstream, "-dev-as", devAddr, "-scopes", "mcp:tools", "-tool-scope", "ping=tools:ping"}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := startRun(t, o, nil)
	base, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	code, wa := callTool(t, st.Resource, base, "ping")
	if code != http.StatusForbidden || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="mcp:tools tools:ping"`) {
		t.Fatalf("base token: %d %q, want 403 insufficient_scope for mcp:tools tools:ping", code, wa)
	}
	resp, err := http.Get("http://" + devAddr + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"tools:ping"`) {
		t.Errorf("authorization server metadata lacks tools:ping: %s", b)
	}
	up, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools", "tools:ping"})
	if err != nil {
		t.Fatal(err)
	}
	if code, wa := callTool(t, st.Resource, up, "ping"); code != http.StatusOK {
		t.Errorf("stepped-up token: %d %q, want 200", code, wa)
	}
}

// TestConfigDevAS: the configuration file's dev_as starts the embedded
// authorization server for the routes that list it; a route's tool scope
// applies as with -tool-scope.
func TestConfigDevAS(t *testing.T) {
	upstream, _ := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	file := filepath.Join(t.TempDir(), "mcpguard.yaml")
	os.WriteFile(file, []byte(`dev_as: `+devAddr+`
routes:
  - resource: http://`+addr+`/mcp
    upstream: `+upstream+`
    issuers: [http://`+devAddr+`]
    scopes: [mcp:tools]
    operations:
      tools: {ping: [tools:ping]}
`), 0o600)
	o, err := parseFlags([]string{"-addr", addr, "-config", file}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := startRun(t, o, nil)
	if st.DevAS == nil {
		t.Fatal("dev_as: no development authorization server started")
	}
	base, _ := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools"})
	if code, wa := callTool(t, st.Resource, base, "ping"); code != http.StatusForbidden || !strings.Contains(wa, "insufficient_scope") {
		t.Errorf("base token: %d %q, want 403 insufficient_scope", code, wa)
	}
	up, _ := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools", "tools:ping"})
	if code, wa := callTool(t, st.Resource, up, "ping"); code != http.StatusOK {
		t.Errorf("token with tools:ping: %d %q, want 200", code, wa)
	}
}

// TestDevASRefused: dev_as off loopback, -tool-scope malformed, and the
// flags -config replaces are refused before anything listens.
func TestDevASRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcpguard.yaml")
	os.WriteFile(file, []byte("dev_as: 0.0.0.0:9000\nroutes:\n  - resource: http://127.0.0.1:8080/mcp\n    upstream: http://127.0.0.1:3000/mcp\n    issuers: [http://127.0.0.1:9000]\n"), 0o600)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-config", file, "-addr", "127.0.0.1:0"}, 1, "dev_as must be a loopback host:port"},
		{[]string{"-check", "-config", file}, 1, "dev_as must be a loopback host:port"},
		{[]string{"-upstream", "http://127.0.0.1:3000/mcp", "-dev-as", "127.0.0.1:9000", "-tool-scope", "ping"}, 2, `-tool-scope "ping": want NAME=SCOPE`},
		{[]string{"-config", file, "-tool-scope", "ping=x"}, 2, "-config replaces -tool-scope"},
	}
	for _, tt := range tests {
		var stderr syncBuf
		if code := Run(context.Background(), tt.args, func(string) string { return "" }, &syncBuf{}, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}
