package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageNamesEnvironment: -h names the environment variable of every
// flag.
func TestUsageNamesEnvironment(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, noEnv, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	n := 0
	for _, name := range []string{"addr", "dev-as-addr", "issuer", "scopes", "token-mode", "introspection-client-secret", "dev-insecure-cimd-loopback", "dev-cimd-root-ca"} {
		n++
		if !strings.Contains(out.String(), "  -"+name) || !strings.Contains(out.String(), "environment: "+envName(name)+"\n") {
			t.Errorf("-h does not name -%s and %s:\n%s", name, envName(name), out.String())
		}
	}
	if got := strings.Count(out.String(), "environment: MCPGUARD_"); got < n {
		t.Errorf("%d environment lines, want one per flag", got)
	}
}

// TestCIMDDevMode: by default the embedded authorization server refuses
// a Client ID Metadata Document served on loopback (the SSRF guard);
// with -dev-insecure-cimd-loopback and the document server's CA it
// resolves it and issues a code. The mode is loud and refused where it
// means nothing.
func TestCIMDDevMode(t *testing.T) {
	const cb = "http://127.0.0.1:7777/callback"
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id": docURL, "client_name": "local CIMD client",
			"redirect_uris": []string{cb}, "token_endpoint_auth_method": "none",
		})
	}))
	defer docs.Close()
	docURL = docs.URL + "/client.json"
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorize := func(ep endpoints) (int, string) {
		q := url.Values{
			"response_type": {"code"}, "client_id": {docURL}, "redirect_uri": {cb},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
			"resource": {ep.MCP}, "scope": {"mcp:tools"}, "state": {"s"},
		}
		resp, err := hc.Get(ep.Issuer + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	base := []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "error"}

	t.Run("default refuses loopback documents", func(t *testing.T) {
		ep, stderr, _ := startRun(t, base, noEnv)
		if status, loc := authorize(ep); status != http.StatusBadRequest || loc != "" {
			t.Errorf("authorize = %d %q, want the 400 error page", status, loc)
		}
		if strings.Contains(stderr.String(), "WARNING") {
			t.Errorf("warning printed without the mode")
		}
	})
	t.Run("dev mode resolves them", func(t *testing.T) {
		ep, stderr, _ := startRun(t, append(base, "-dev-insecure-cimd-loopback", "-dev-cimd-root-ca", caFile), noEnv)
		status, loc := authorize(ep)
		u, _ := url.Parse(loc)
		if status != http.StatusFound || !strings.HasPrefix(loc, cb+"?") || u.Query().Get("code") == "" {
			t.Errorf("authorize = %d %q, want a code for %s", status, loc, cb)
		}
		if !strings.Contains(stderr.String(), "WARNING: -dev-insecure-cimd-loopback is on") {
			t.Errorf("no warning:\n%s", stderr)
		}
	})
	t.Run("dev mode from the environment", func(t *testing.T) {
		env := map[string]string{"MCPGUARD_DEV_INSECURE_CIMD_LOOPBACK": "true", "MCPGUARD_DEV_CIMD_ROOT_CA": caFile}
		ep, _, _ := startRun(t, base, func(k string) string { return env[k] })
		if status, _ := authorize(ep); status != http.StatusFound {
			t.Errorf("authorize = %d, want 302", status)
		}
	})
	t.Run("dev mode without the CA uses the system roots", func(t *testing.T) {
		ep, _, _ := startRun(t, append(base, "-dev-insecure-cimd-loopback"), noEnv)
		if status, _ := authorize(ep); status != http.StatusBadRequest {
			t.Errorf("authorize = %d, want 400 (httptest's certificate is not trusted)", status)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want error
	}{
		{"with -issuer", []string{"-issuer", "https://as.example.com", "-dev-insecure-cimd-loopback"}, errCIMDDevNeedsDevAS},
		{"CA without the mode", []string{"-dev-cimd-root-ca", caFile}, errCIMDRootCANoMode},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), append(base, tt.args...), noEnv, io.Discard, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("run = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("CA file without a certificate", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.pem")
		_ = os.WriteFile(bad, []byte("not pem"), 0o600)
		err := run(t.Context(), append(base, "-dev-insecure-cimd-loopback", "-dev-cimd-root-ca", bad), noEnv, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Errorf("run = %v", err)
		}
	})
}
