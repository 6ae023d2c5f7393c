package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/client"
)

// TestRunEnterprise starts the example with -dev-idp-addr and runs both
// enterprise flows with mcpguard's client from what the banner prints:
// the ID token through client.IDJAG, the workload JWT (from a file)
// through client.WorkloadIdentity. whoami answers as the user, then as
// the workload.
func TestRunEnterprise(t *testing.T) {
	ep, stderr, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-dev-idp-addr", "127.0.0.1:0",
		"-dev-xaa-secret", "test-secret", "-log-level", "warn"}, noEnv)
	out := stderr.String()
	idp := regexp.MustCompile(`development IdP \(trusted by the authorization server\): (\S+)`).FindStringSubmatch(out)
	idToken := regexp.MustCompile(`IdentityAssertion:\n\s+(\S+)`).FindStringSubmatch(out)
	wl := regexp.MustCompile(`client.WorkloadIdentity:\n\s+(\S+)`).FindStringSubmatch(out)
	if idp == nil || idToken == nil || wl == nil {
		t.Fatalf("banner lacks the IdP, the ID token or the workload JWT:\n%s", out)
	}
	loopback := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	idjag, err := client.NewIDJAG(client.IDJAGConfig{
		Client:            client.ClientCredentialsConfig{ClientID: devXAAClientID, ClientSecret: "test-secret", Issuer: ep.Issuer, DiscoveryHTTPClient: loopback},
		IdPTokenURL:       idp[1] + "/token",
		IdPClientID:       devXAAClientID,
		IdentityAssertion: func(context.Context) (string, error) { return idToken[1], nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(wl[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	workload, err := client.NewWorkloadIdentity(client.WorkloadIdentityConfig{TokenFile: file, Issuer: ep.Issuer, DiscoveryHTTPClient: loopback})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		a    client.Authorizer
		want string
	}{
		{"ID-JAG", idjag, `"subject":"dev-user"`},
		{"workload", workload, `"subject":"` + devWorkloadSubject + `"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := client.New(client.Config{Resource: ep.MCP, Authorizer: tt.a})
			if err != nil {
				t.Fatal(err)
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
			req, _ := http.NewRequest(http.MethodPost, ep.MCP, strings.NewReader(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), strings.ReplaceAll(tt.want, `"`, `\"`)) && !strings.Contains(string(b), tt.want) {
				t.Errorf("whoami: got %d %s, want 200 with %s", resp.StatusCode, b, tt.want)
			}
		})
	}
}

// TestDevIdPRefused: -dev-idp-addr needs the embedded server and a
// loopback address.
func TestDevIdPRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want error
	}{
		{"with -issuer", []string{"-issuer", "https://as.example", "-dev-idp-addr", "127.0.0.1:0"}, errDevIdPWithIssuer},
		{"not loopback", []string{"-dev-idp-addr", "0.0.0.0:0"}, errDevIdPLoopback},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, noEnv, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := startDevIdP(o); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}
