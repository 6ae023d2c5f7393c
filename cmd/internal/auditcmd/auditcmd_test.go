package auditcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/internal/heldport"
	"github.com/mcpguard/mcpguard/validate"
)

// startExample starts the example MCP server and its development
// authorization server on 127.0.0.1, the MCP server wrapped by wrap (if
// not nil), and returns the endpoint and a token for it.
func startExample(t *testing.T, wrap func(http.Handler) http.Handler) (endpoint, token string) {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	mcpTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	endpoint = "http://" + mcpTS.Listener.Addr().String() + "/mcp"
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{endpoint}, Scopes: []string{"mcp:tools"}, AutoApprove: true})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: issuer, Keys: &validate.StaticKeys{Set: as.PublicKeys()}}},
		Audiences: []string{endpoint},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Resource: endpoint, AuthorizationServers: []string{issuer}, Validator: v, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	mcpTS.Config.Handler = h
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)
	token, err = as.IssueToken("alice", "t1", "cli", endpoint, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	return endpoint, token
}

// noErrorCode drops the error code from 401s to requests with a token: a
// SHOULD violation (TOK-INVALID-TOKEN-CODE) only.
func noErrorCode(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		if rec.Code == http.StatusUnauthorized && r.Header.Get("Authorization") != "" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="mcp:tools"`)
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func runCmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"-interval", "0"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExitCodes(t *testing.T) {
	good, _ := startExample(t, nil)
	bad, _ := startExample(t, noErrorCode)
	// Nothing listens there: a port outside the ephemeral range (heldport),
	// which no outgoing connection or port-0 listener is given meanwhile.
	closed := "http://" + heldport.New(t, 1).Take() + "/mcp"

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no URL", nil, ExitUsage},
		{"two URLs", []string{good, good}, ExitUsage},
		{"bad -fail-on", []string{"-fail-on", "often", good}, ExitUsage},
		{"not a URL", []string{"ftp://x/mcp"}, ExitUsage},
		{"unreachable", []string{"-timeout", "1s", closed}, ExitNotAudit},
		{"example, no credentials", []string{good}, ExitOK},
		{"SHOULD failure, default -fail-on must", []string{bad}, ExitOK},
		{"SHOULD failure, -fail-on should", []string{"-fail-on", "should", bad}, ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, tt.args...)
			if code != tt.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.want, out, errOut)
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	endpoint, token := startExample(t, noErrorCode)
	code, out, errOut := runCmd(t, map[string]string{"MCPGUARD_AUDIT_TOKEN": token}, "-json", "-no-tool-calls", endpoint)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, token) {
		t.Fatal("the JSON report contains the token")
	}
	var rep struct {
		Endpoint    string `json:"endpoint"`
		Credentials string `json:"credentials"`
		Results     []struct {
			ID, Verdict, Severity string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if rep.Endpoint != endpoint || rep.Credentials != "token" || len(rep.Results) == 0 {
		t.Errorf("report header: %+v", rep)
	}

	sarif := filepath.Join(t.TempDir(), "audit.sarif")
	if code, _, errOut := runCmd(t, nil, "-sarif", sarif, endpoint); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(sarif)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID string `json:"ruleId"`
				Level  string `json:"level"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatalf("SARIF: %v", err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Tool.Driver.Rules) == 0 {
		t.Fatalf("SARIF shape: %s", b)
	}
	if r := log.Runs[0].Results; len(r) != 1 || r[0].RuleID != "TOK-INVALID-TOKEN-CODE" || r[0].Level != "warning" {
		t.Errorf("SARIF results %+v, want one TOK-INVALID-TOKEN-CODE warning", r)
	}
}

// TestCAFile: an https endpoint with a private CA is audited with -ca-file
// and unreachable without it.
func TestCAFile(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer scope="mcp:tools"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, nil, "-timeout", "2s", ts.URL+"/mcp"); code != ExitNotAudit {
		t.Errorf("without -ca-file: exit %d, want %d: %s", code, ExitNotAudit, errOut)
	}
	code, out, errOut := runCmd(t, nil, "-json", "-ca-file", ca, ts.URL+"/mcp")
	if code != ExitFailed { // no metadata: PRM-DISCOVERY fails
		t.Errorf("with -ca-file: exit %d, want %d: %s", code, ExitFailed, errOut)
	}
	var rep struct {
		Results []struct{ ID, Verdict string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.ID == "CH-401" && r.Verdict != "pass" {
			t.Errorf("CH-401: %s, want pass", r.Verdict)
		}
	}
	if code, _, _ := runCmd(t, nil, "-ca-file", filepath.Join(t.TempDir(), "missing.pem"), ts.URL+"/mcp"); code != ExitUsage {
		t.Errorf("missing -ca-file: exit %d, want %d", code, ExitUsage)
	}
}

// TestDeadlineFlag: -deadline bounds a run against a server that drips
// every answer: the report is printed, the command exits 3 and says why,
// and the checks not reached are skipped for the deadline.
func TestDeadlineFlag(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer scope="mcp:tools"`)
		w.WriteHeader(http.StatusUnauthorized)
		for i := 0; i < 600; i++ { // at most a minute
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	defer ts.Close()
	// The exit code, stderr and the report say the deadline ended the run
	// (without -deadline, the default 3 minutes, every check would run,
	// each request cut by -timeout); no bound on the elapsed real time,
	// which a loaded machine stretches.
	code, out, errOut := runCmd(t, nil, "-timeout", "1s", "-deadline", "2s", ts.URL+"/mcp")
	if code != ExitNotAudit || !strings.Contains(errOut, "deadline") {
		t.Errorf("exit %d, stderr %q; want %d and the deadline named", code, errOut, ExitNotAudit)
	}
	if !strings.Contains(out, "not reached: the run's deadline passed (-deadline)") {
		t.Errorf("the report does not show the checks the deadline skipped:\n%s", out)
	}
}

// TestProxyFlags: the proxy flags are checked before anything is sent.
func TestProxyFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"upstream not a URL", []string{"-upstream", "ftp://x/mcp", "http://127.0.0.1:1/mcp"}, "upstream"},
		{"assertion settings without upstream", []string{"-assertion-header", "X-Identity", "http://127.0.0.1:1/mcp"}, "need an upstream"},
		{"missing key file", []string{"-upstream", "http://127.0.0.1:2/mcp", "-assertion-key", filepath.Join(dir, "missing.pem"), "http://127.0.0.1:1/mcp"}, "-assertion-key"},
		{"not a key", []string{"-upstream", "http://127.0.0.1:2/mcp", "-assertion-key", bad, "http://127.0.0.1:1/mcp"}, "no PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, nil, tt.args...)
			if code != ExitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, errOut, ExitUsage, tt.want)
			}
		})
	}
}
