package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// syncBuffer is an io.Writer safe for the concurrent writes of run's
// logger and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func noEnv(string) string { return "" }

// startRun runs run with args in the background and returns its endpoints
// and a stop function that cancels run's context and returns run's error.
func startRun(t *testing.T, args []string, getenv func(string) string) (endpoints, *syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	readyc := make(chan endpoints, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, getenv, stderr, func(ep endpoints) { readyc <- ep })
	}()
	var ep endpoints
	select {
	case ep = <-readyc:
	case err := <-done:
		cancel()
		t.Fatalf("run returned before ready: %v\nstderr:\n%s", err, stderr)
	case <-time.After(time.Minute): // only a failing run: generous for a loaded machine
		cancel()
		t.Fatalf("run not ready after a minute\nstderr:\n%s", stderr)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatalf("run did not return 15s after cancel")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return ep, stderr, stop
}

// TestRunDefaults starts the example the way `go run ./examples/mcpserver`
// does (embedded authorization server, default scopes), but on free ports,
// and walks the discovery a client does: 401 challenge, protected-resource
// metadata, authorization server metadata. Then it checks a clean shutdown.
func TestRunDefaults(t *testing.T) {
	ep, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "warn"}, noEnv)

	u, err := url.Parse(ep.MCP)
	if err != nil || u.Scheme != "http" || u.Path != "/mcp" || strings.HasSuffix(u.Host, ":0") || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("resource = %q, want http://127.0.0.1:<bound port>/mcp", ep.MCP)
	}
	origin := "http://" + u.Host
	wantMetaURL := origin + "/.well-known/oauth-protected-resource/mcp"
	if ep.Metadata != wantMetaURL {
		t.Errorf("metadata URL = %q, want %q", ep.Metadata, wantMetaURL)
	}
	if !ep.DevAS || !strings.HasPrefix(ep.Issuer, "http://127.0.0.1:") || strings.HasSuffix(ep.Issuer, ":0") {
		t.Errorf("issuer = %q (dev %v), want the embedded server on a bound loopback port", ep.Issuer, ep.DevAS)
	}

	// 401: no token. RFC 6750 §3.1: no error code; MCP: scope and
	// resource_metadata.
	req, _ := http.NewRequest(http.MethodPost, ep.MCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantChallenge := `Bearer scope="mcp:tools", resource_metadata="` + wantMetaURL + `"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("no token: got %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}
	if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 {
		t.Errorf("WWW-Authenticate lines = %q, want exactly one", got)
	}
	if string(body) != `{"error":"unauthorized"}` {
		t.Errorf("401 body = %s", body)
	}

	// Protected-resource metadata, path-inserted (RFC 9728 §3.1) and root.
	var prm map[string]any
	getJSON(t, wantMetaURL, &prm)
	wantPRM := map[string]any{
		"resource":                 ep.MCP,
		"authorization_servers":    []any{ep.Issuer},
		"scopes_supported":         []any{"mcp:tools", "notes:read", "notes:write"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "mcpguard example notes server",
	}
	if !reflect.DeepEqual(prm, wantPRM) {
		t.Errorf("path-inserted metadata:\n got %v\nwant %v", prm, wantPRM)
	}
	var rootPRM map[string]any
	getJSON(t, origin+"/.well-known/oauth-protected-resource", &rootPRM)
	if rootPRM["resource"] != origin {
		t.Errorf("root metadata resource = %v, want the origin %q (RFC 9728 §3.3)", rootPRM["resource"], origin)
	}

	// The authorization server it names.
	var as map[string]any
	getJSON(t, ep.Issuer+"/.well-known/oauth-authorization-server", &as)
	if as["issuer"] != ep.Issuer || as["client_id_metadata_document_supported"] != true {
		t.Errorf("AS metadata issuer=%v cimd=%v, want %q and true", as["issuer"], as["client_id_metadata_document_supported"], ep.Issuer)
	}

	if !strings.Contains(stderr.String(), "TOKEN=ey") || !strings.Contains(stderr.String(), ep.MCP) {
		t.Errorf("welcome text lacks the MCP URL or the development token:\n%s", stderr)
	}

	if err := stop(); err != nil {
		t.Fatalf("run after cancel = %v, want nil (clean shutdown)", err)
	}
	if _, err := http.Get(wantMetaURL); err == nil {
		t.Errorf("server still answering after shutdown")
	}
	if _, err := http.Get(ep.Issuer + "/jwks"); err == nil {
		t.Errorf("authorization server still answering after shutdown")
	}
}

// TestRunEnvironment checks that flags come from MCPGUARD_* variables and
// that the command line wins.
func TestRunEnvironment(t *testing.T) {
	env := map[string]string{
		"MCPGUARD_ADDR":        "127.0.0.1:0",
		"MCPGUARD_DEV_AS_ADDR": "127.0.0.1:0",
		"MCPGUARD_SCOPES":      "env:scope",
		"MCPGUARD_LOG_LEVEL":   "error",
	}
	ep, _, stop := startRun(t, []string{"-scopes", "a:b,c:d"}, func(k string) string { return env[k] })
	resp, err := http.Post(ep.MCP, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer scope="a:b c:d", resource_metadata="` + ep.Metadata + `"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("challenge = %q, want %q", got, want)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v, want nil", err)
	}
}

func TestRunNoScopes(t *testing.T) {
	ep, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-scopes", "", "-log-level", "error"}, noEnv)
	resp, err := http.Post(ep.MCP, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer resource_metadata="` + ep.Metadata + `"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("challenge = %q, want %q", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantIs  error
		wantErr string // else a substring: errors of the flag package and of other packages' constructors have no sentinel here
	}{
		{name: "help", args: []string{"-h"}, wantIs: flag.ErrHelp},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: "flag provided but not defined"},
		{name: "extra argument", args: []string{"-addr", "127.0.0.1:0", "x"}, wantErr: "unexpected arguments"},
		{name: "bad env duration", env: map[string]string{"MCPGUARD_LEEWAY": "soon"}, wantErr: "MCPGUARD_LEEWAY"},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: "log-level"},
		{name: "public addr without resource", args: []string{"-addr", "0.0.0.0:0"}, wantIs: errResourceRequired},
		{name: "all interfaces without resource", args: []string{"-addr", ":0"}, wantIs: errResourceRequired},
		{name: "dev AS not loopback", args: []string{"-addr", "127.0.0.1:0", "-dev-as-addr", ":0"}, wantIs: errDevASNotLoopback},
		{name: "http issuer not loopback", args: []string{"-addr", "127.0.0.1:0", "-issuer", "http://auth.example.com"}, wantIs: jwks.ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, tt.args, func(k string) string { return tt.env[k] }, io.Discard, func(endpoints) {
				t.Errorf("server started")
				cancel()
			})
			switch {
			case err == nil:
				t.Fatalf("run = nil, want an error")
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("run = %v, want errors.Is %v", err, tt.wantIs)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("run = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want options
	}{
		{
			name: "defaults",
			want: options{addr: "127.0.0.1:8080", devASAddr: "127.0.0.1:9000", scopes: []string{"mcp:tools"}, tenantClaim: "tenant", logLevel: slog.LevelInfo, devAutoApprove: true},
		},
		{
			name: "environment",
			env: map[string]string{
				"MCPGUARD_ISSUER": "https://login.example.com", "MCPGUARD_SCOPES": "a b,c", "MCPGUARD_AUDIENCE": "api://x",
				"MCPGUARD_TENANT_CLAIM": "tid", "MCPGUARD_LEEWAY": "5s", "MCPGUARD_ALLOW_JWT_TYP": "true",
				"MCPGUARD_DEV_AUTO_APPROVE": "false", "MCPGUARD_LOG_LEVEL": "debug", "MCPGUARD_ALLOW_SCP": "1",
				"MCPGUARD_ALLOW_MISSING_JTI": "true", "MCPGUARD_ALLOW_MISSING_CLIENT_ID": "true",
			},
			want: options{
				addr: "127.0.0.1:8080", devASAddr: "127.0.0.1:9000", issuer: "https://login.example.com",
				scopes: []string{"a", "b", "c"}, audiences: []string{"api://x"}, tenantClaim: "tid",
				leeway: 5 * time.Second, allowJWTType: true, allowSCP: true, allowMissingJTI: true,
				allowMissingClientID: true, logLevel: slog.LevelDebug,
			},
		},
		{
			name: "command line wins",
			args: []string{"-addr", "127.0.0.1:1", "-scopes", "", "-dev-auto-approve=true", "-resource", "https://mcp.example.com/mcp"},
			env:  map[string]string{"MCPGUARD_ADDR": "127.0.0.1:2", "MCPGUARD_SCOPES": "x", "MCPGUARD_DEV_AUTO_APPROVE": "false"},
			want: options{addr: "127.0.0.1:1", resource: "https://mcp.example.com/mcp", devASAddr: "127.0.0.1:9000", scopes: []string{}, tenantClaim: "tenant", logLevel: slog.LevelInfo, devAutoApprove: true},
		},
		{
			name: "duplicate scopes dropped",
			args: []string{"-scopes", "a,a b , a"},
			want: options{addr: "127.0.0.1:8080", devASAddr: "127.0.0.1:9000", scopes: []string{"a", "b"}, tenantClaim: "tenant", logLevel: slog.LevelInfo, devAutoApprove: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.waitKeys == 0 {
				tt.want.waitKeys = defaultWaitKeys // ops: the -wait-keys default
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// TestRunExternalIssuer runs the example against an external issuer (here
// a development authorization server on its own httptest listener): keys
// are discovered through its metadata and JWKS, and -resource differs from
// the listener, as behind a reverse proxy.
func TestRunExternalIssuer(t *testing.T) {
	const resource = "http://127.0.0.1:1/mcp" // the public URL; never dialled
	asTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	ep, _, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-issuer", issuer, "-resource", resource, "-tenant-claim", "tenant", "-log-level", "error"}, noEnv)
	if ep.DevAS || ep.Issuer != issuer || ep.MCP != resource {
		t.Fatalf("endpoints = %+v", ep)
	}
	tok, err := as.IssueToken("ext-user", "ext-tenant", "ext-client", resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	// The listener's own URL, not the resource: that is the proxy's job.
	listenURL := "http://" + ep.Listen + "/mcp"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, listenURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"structuredContent":{"client_id":"ext-client","scopes":["mcp:tools"],"subject":"ext-user","tenant":"ext-tenant"}`) {
		t.Errorf("whoami = %d %s", resp.StatusCode, got)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v, want nil", err)
	}
}
