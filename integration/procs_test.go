package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/integration/internal/exampleproc"
)

// This file runs real programs: the example server (examples/mcpserver,
// built once per test binary) and Node.js scripts of integration/node
// (the TypeScript MCP SDK clients, panva's oidc-provider). Everything
// binds 127.0.0.1.

// nodeDir holds package.json, package-lock.json and the scripts.
const nodeDir = "node"

// nodeInstallHint says how to get what the Node tests need.
const nodeInstallHint = "install Node.js >= 20.19 with npm (Debian: apt-get install nodejs npm), then run `npm ci` in integration/node"

// requireNode skips the test when node, npm or the installed packages are
// missing, or fails it when CI is set: in CI these tests must run.
func requireNode(t *testing.T) string {
	t.Helper()
	missing := ""
	node, err := exec.LookPath("node")
	if err != nil {
		missing = "node is not on PATH"
	} else if _, err := exec.LookPath("npm"); err != nil {
		missing = "npm is not on PATH"
	} else {
		for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/client", "oidc-provider"} {
			if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json")); err != nil {
				missing = pkg + " is not installed in integration/node/node_modules"
				break
			}
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set, so this test may not skip): %s", missing, nodeInstallHint)
		}
		t.Skipf("%s: %s", missing, nodeInstallHint)
	}
	return node
}

// exampleBinary builds examples/mcpserver (exampleproc.Binary).
func exampleBinary(t *testing.T) string {
	t.Helper()
	return exampleproc.Binary(t)
}

// example is a running examples/mcpserver process.
type example struct {
	mcpURL string // the MCP endpoint, the resource
	issuer string // the authorization server it trusts
	stderr *syncBuf
}

// syncBuf is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuf = exampleproc.SyncBuf

// startExample runs the example server bin (exampleproc.Start).
func startExample(t *testing.T, bin string, env []string, args ...string) *example {
	t.Helper()
	e := exampleproc.Start(t, bin, env, args...)
	return &example{mcpURL: e.MCPURL, issuer: e.Issuer, stderr: e.Stderr}
}

// driverResult is what integration/node/driver.mjs prints.
type driverResult struct {
	Client          string `json:"client"`
	Revision        string `json:"revision"`
	ProtocolVersion string `json:"protocolVersion"`
	OK              bool   `json:"ok"`
	Error           string `json:"error"`
	ClientID        string `json:"clientId"`
	Trace           []struct {
		Method          string  `json:"method"`
		URL             string  `json:"url"`
		Status          int     `json:"status"`
		WWWAuthenticate string  `json:"wwwAuthenticate"`
		RegisteredScope *string `json:"registeredScope"`
		ClientID        string  `json:"clientId"`
	} `json:"trace"`
	Authorizations []struct {
		ClientID            string `json:"clientId"`
		Scope               string `json:"scope"`
		Resource            string `json:"resource"`
		CodeChallengeMethod string `json:"codeChallengeMethod"`
		HasCodeChallenge    bool   `json:"hasCodeChallenge"`
	} `json:"authorizations"`
	Tokens []struct {
		Scope  *string `json:"scope"`
		Claims *struct {
			Aud      any    `json:"aud"`
			Scope    string `json:"scope"`
			ClientID string `json:"client_id"`
			Sub      string `json:"sub"`
		} `json:"claims"`
	} `json:"tokens"`
	Tools      []string `json:"tools"`
	Whoami     string   `json:"whoami"`
	NotesWrite *struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"notesWrite"`
	NotesList *struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"notesList"`
	// Call is the one call of --tool.
	Call *struct {
		Tool    string `json:"tool"`
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"call"`
}

// runNode runs `node script args...` in integration/node, bounded by ctx,
// and returns its stdout; a non-zero exit fails the test.
func runNode(ctx context.Context, t *testing.T, node, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = nodeDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// runDriver runs driver.mjs and decodes its report.
func runDriver(ctx context.Context, t *testing.T, node string, args ...string) *driverResult {
	t.Helper()
	out := runNode(ctx, t, node, "driver.mjs", args...)
	var r driverResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("driver output: %v\n%s", err, out)
	}
	return &r
}

// cimdDocServer serves a Client ID Metadata Document for redirect URI
// driverRedirect over TLS on 127.0.0.1 and returns its client_id URL and
// a PEM file of the certificate to trust (as mkcert's rootCA.pem would
// be), for -dev-cimd-root-ca. fetches counts the document fetches.
func cimdDocServer(t *testing.T) (clientID, caFile string, fetches func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	ts := httptest.NewUnstartedServer(nil)
	clientID = "https://" + ts.Listener.Addr().String() + "/client-metadata.json"
	doc, _ := json.Marshal(map[string]any{
		"client_id":                  clientID,
		"client_name":                "mcpguard integration CIMD client",
		"redirect_uris":              []string{driverRedirect},
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/client-metadata.json" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	ts.StartTLS()
	t.Cleanup(ts.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return clientID, caFile, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// driverRedirect is the redirect URI of driver.mjs.
const driverRedirect = "http://127.0.0.1:3999/callback"
