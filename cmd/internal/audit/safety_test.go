package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
)

// The audit must be safe to point at a hostile server (issue 22 item 1):
// the tests below each stand for one way a server under audit could abuse
// the auditor.

// collector is a server of the attacker's that records what reaches it.
type collector struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string // Authorization headers received, one per request
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"stolen","token_type":"Bearer"}`)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auth...)
}

// editJSON rewrites the JSON object answers of next whose path starts
// with prefix.
func editJSON(next http.Handler, prefix string, fn func(map[string]any)) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if !strings.HasPrefix(r.URL.Path, prefix) || rec.Code != http.StatusOK {
			return
		}
		var m map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			return
		}
		fn(m)
		b, _ := json.Marshal(m)
		setBody(rec, string(b))
	})
}

// tokenEndpointAt makes the authorization server's metadata name
// tokenURL as its token_endpoint.
func tokenEndpointAt(tokenURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return editJSON(next, "/.well-known/", func(m map[string]any) { m["token_endpoint"] = tokenURL })
	}
}

// runRaw runs an audit and returns the report and Run's error.
func runRaw(t *testing.T, cfg audit.Config) (*audit.Report, error) {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = -1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	a, err := audit.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := a.Run(ctx)
	if rep == nil {
		t.Fatalf("Run: no report: %v", err)
	}
	return rep, err
}

// TestSecretNotSentToServersTokenEndpoint: with client credentials and no
// token URL (the documented default of 0.1.0), an audited server whose
// authorization-server metadata names a token endpoint on another host
// collects nothing: the audit refuses the grant and says why.
func TestSecretNotSentToServersTokenEndpoint(t *testing.T) {
	const secret = "operator-client-secret"
	thief := newCollector(t)
	e := newEnv(t, exampleServer(t, nil), tokenEndpointAt(thief.URL+"/token"))
	rep, err := runRaw(t, audit.Config{
		Endpoint:          e.mcpURL,
		CallTools:         true,
		ClientCredentials: audit.ClientCredentials{ClientID: "ops-client", ClientSecret: secret},
	})
	if got := thief.received(); len(got) != 0 {
		t.Fatalf("the token endpoint the audited server named got %d request(s), Authorization %q; want none", len(got), got)
	}
	if !errors.Is(err, audit.ErrCredentials) {
		t.Errorf("Run: err %v, want ErrCredentials", err)
	}
	r := result(rep, audit.CredAccepted)
	if r.Verdict != audit.Skip || !strings.Contains(r.Detail, "never sends a client secret to a token_endpoint the audited server names") {
		t.Errorf("CRED-ACCEPTED: %s %q, want skip naming the refusal", r.Verdict, r.Detail)
	}
}

// fakeAS is an authorization server whose metadata names tokenPath on
// its own origin and whose token endpoint issues tokens of e.
func fakeAS(t *testing.T, e *env, tokenURL func(origin string) string, grants *int) *httptest.Server {
	t.Helper()
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"issuer": ts.URL, "authorization_endpoint": ts.URL + "/authorize",
				"token_endpoint": tokenURL(ts.URL), "response_types_supported": []string{"code"},
			})
		case "/token":
			if _, p, ok := r.BasicAuth(); !ok || p != "s3cret" {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
			*grants++
			_ = r.ParseForm()
			tok := e.token(t, "svc", "t1", strings.Fields(r.PostForm.Get("scope"))...)
			_, _ = io.WriteString(w, `{"access_token":"`+tok+`","token_type":"Bearer"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestIssuerTokenEndpoint: with -issuer, the secret goes to the
// token_endpoint of that issuer's metadata only when it is on the
// metadata's origin.
func TestIssuerTokenEndpoint(t *testing.T) {
	e := newEnv(t, exampleServer(t, nil), nil)
	thief := newCollector(t)
	var sameGrants, crossGrants int
	same := fakeAS(t, e, func(o string) string { return o + "/token" }, &sameGrants)
	cross := fakeAS(t, e, func(string) string { return thief.URL + "/token" }, &crossGrants)
	cc := func(issuer string) audit.ClientCredentials {
		return audit.ClientCredentials{Issuer: issuer, ClientID: "ops", ClientSecret: "s3cret", Scopes: []string{baseScope, readScope}}
	}

	rep, err := runRaw(t, audit.Config{Endpoint: e.mcpURL, ClientCredentials: cc(same.URL)})
	if err != nil || sameGrants != 1 {
		t.Fatalf("same origin: err %v, %d grants, want nil and 1\n%s", err, sameGrants, dump(rep))
	}
	if r := result(rep, audit.CredAccepted); r.Verdict != audit.Pass {
		t.Errorf("same origin: CRED-ACCEPTED %s %q, want pass", r.Verdict, r.Detail)
	}

	rep, err = runRaw(t, audit.Config{Endpoint: e.mcpURL, ClientCredentials: cc(cross.URL)})
	if got := thief.received(); len(got) != 0 {
		t.Fatalf("cross origin: the other host got %d request(s), Authorization %q; want none", len(got), got)
	}
	if !errors.Is(err, audit.ErrCredentials) {
		t.Errorf("cross origin: err %v, want ErrCredentials", err)
	}
	if r := result(rep, audit.CredAccepted); r.Verdict != audit.Skip || !strings.Contains(r.Detail, "not on the metadata's origin") {
		t.Errorf("cross origin: CRED-ACCEPTED %s %q, want skip saying the origin differs", r.Verdict, r.Detail)
	}
}

// TestCredentialURLs: a token URL or issuer that would carry the secret
// over plain http to a host that is not loopback is refused by New,
// saying why; nothing is dialled.
func TestCredentialURLs(t *testing.T) {
	tests := []struct {
		name    string
		cc      audit.ClientCredentials
		wantErr string // "" means accepted
	}{
		{"http token URL, private host", audit.ClientCredentials{ClientID: "c", TokenURL: "http://10.255.255.1/token"}, "plain http to a host that is not loopback"},
		{"http token URL, public name", audit.ClientCredentials{ClientID: "c", TokenURL: "http://auth.example.com/token"}, "plain http to a host that is not loopback"},
		{"http issuer, public name", audit.ClientCredentials{ClientID: "c", Issuer: "http://auth.example.com"}, "issuer"},
		{"token URL with userinfo", audit.ClientCredentials{ClientID: "c", TokenURL: "https://u:p@auth.example.com/token"}, "no userinfo"},
		{"token URL without client ID", audit.ClientCredentials{TokenURL: "https://auth.example.com/token"}, "without a client ID"},
		{"https token URL", audit.ClientCredentials{ClientID: "c", TokenURL: "https://auth.example.com/token"}, ""},
		{"http token URL on loopback", audit.ClientCredentials{ClientID: "c", TokenURL: "http://127.0.0.1:9/token"}, ""},
		{"http localhost issuer", audit.ClientCredentials{ClientID: "c", Issuer: "http://localhost:9"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := audit.New(audit.Config{Endpoint: "http://127.0.0.1:1/mcp", ClientCredentials: tt.cc})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("New: %v, want nil", err)
			case tt.wantErr != "" && (!errors.Is(err, audit.ErrConfig) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("New: %v, want ErrConfig saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestHandedURLsGuarded: URLs the audited server hands the audit that
// point at private, link-local or cloud metadata addresses are refused
// by the dial guard (the endpoint is on loopback, so only loopback is
// opened), quickly, and the report says so.
func TestHandedURLsGuarded(t *testing.T) {
	tests := []struct {
		name  string
		wrap  func(e *env, next http.Handler) http.Handler
		check string // the result whose evidence must show the refusal
	}{
		{"resource_metadata at the cloud metadata address", challengeMetadataAt("http://169.254.169.254/latest/meta-data/iam/security-credentials/"), audit.PRMDocument},
		{"resource_metadata in 10/8", challengeMetadataAt("http://10.255.255.1/.well-known/oauth-protected-resource/mcp"), audit.PRMDocument},
		{"authorization server in 10/8", func(e *env, next http.Handler) http.Handler {
			return editJSON(next, "/.well-known/oauth-protected-resource", func(m map[string]any) {
				m["authorization_servers"] = []string{"https://10.255.255.1"}
			})
		}, audit.ASMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, outer(exampleServer(t, nil), tt.wrap), nil)
			// A dial to the unroutable address would wait the Timeout, an
			// hour: the run would then end only with runRaw's 60 s
			// context, with its error (the run takes well under a second
			// when idle).
			rep, err := runRaw(t, audit.Config{Endpoint: e.mcpURL, Timeout: time.Hour})
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the run ended with its context: something waited on a dial: %v", err)
			}
			r := result(rep, tt.check)
			if !strings.Contains(strings.Join(r.Evidence, "\n"), "refused by the SSRF guard") {
				t.Errorf("%s evidence does not show the guard's refusal:\n%s", tt.check, strings.Join(r.Evidence, "\n"))
			}
		})
	}
}

// challengeMetadataAt makes the 401 challenge name u as resource_metadata.
func challengeMetadataAt(u string) func(*env, http.Handler) http.Handler {
	return func(_ *env, next http.Handler) http.Handler {
		return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if rec.Code == http.StatusUnauthorized {
				rec.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+u+`", scope="`+baseScope+`"`)
			}
		})
	}
}

// TestThirdPartyBodiesNotQuoted: what another host answers (a
// resource_metadata URL elsewhere, the authorization server's metadata
// and keys) never appears in the table, JSON or SARIF report.
func TestThirdPartyBodiesNotQuoted(t *testing.T) {
	const marker = "THIRD-PARTY-BODY-7f3a"
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, marker+" internal service answer", http.StatusNotFound)
	}))
	defer other.Close()
	marked := func(next http.Handler) http.Handler {
		return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if rec.Code == http.StatusOK && bytes.HasPrefix(rec.Body.Bytes(), []byte("{")) {
				setBody(rec, `{"x_note":"`+marker+`",`+rec.Body.String()[1:])
			}
		})
	}
	e := newEnv(t, outer(exampleServer(t, nil), challengeMetadataAt(other.URL+"/.well-known/oauth-protected-resource/mcp")), marked)
	rep, _ := runRaw(t, audit.Config{Endpoint: e.mcpURL, Token: e.tokA, CallTools: false})
	var table, js, sarif bytes.Buffer
	if err := audit.WriteTable(&table, rep, true); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteSARIF(&sarif, rep, "test"); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "json": js.String(), "sarif": sarif.String()} {
		if i := strings.Index(out, marker); i >= 0 {
			lo := max(0, i-200)
			t.Errorf("the %s report quotes another host's body: …%s…", name, out[lo:min(len(out), i+60)])
		}
	}
	// The endpoint's own answers are still quoted.
	if !strings.Contains(table.String(), "; body: ") {
		t.Error("the table quotes no body at all")
	}
}

// TestPerHostCap: a host other than the endpoint's gets at most
// MaxRequestsPerHost requests; the checks it cuts are skipped.
func TestPerHostCap(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer as.Close()
	// "localhost" is another host name than the endpoint's 127.0.0.1.
	port := as.URL[strings.LastIndex(as.URL, ":")+1:]
	servers := []string{"http://localhost:" + port, "http://localhost:" + port + "/a", "http://localhost:" + port + "/b"}
	e := newEnv(t, outer(exampleServer(t, nil), func(_ *env, next http.Handler) http.Handler {
		return editJSON(next, "/.well-known/oauth-protected-resource", func(m map[string]any) { m["authorization_servers"] = servers })
	}), nil)
	rep, _ := runRaw(t, audit.Config{Endpoint: e.mcpURL, MaxRequestsPerHost: 2})
	mu.Lock()
	defer mu.Unlock()
	if hits != 2 {
		t.Errorf("the other host got %d requests, want 2", hits)
	}
	if r := result(rep, audit.ASMetadata); !strings.Contains(strings.Join(r.Evidence, "\n"), "not sent (per-host request cap reached)") {
		t.Errorf("AS-METADATA evidence does not show the cap:\n%s", strings.Join(r.Evidence, "\n"))
	}
}

// TestDeadline: a server that drips its answers is cut by Deadline: the
// run ends then, the checks not reached are skipped, not failed, and Run
// says why.
func TestDeadline(t *testing.T) {
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
	// ErrDeadline says the run's Deadline ended it: without it, the run
	// would go on (each request cut by its Timeout) until runRaw's 60 s
	// context, whose end Run reports as that context's error. No bound on
	// the elapsed real time, which a loaded machine stretches.
	rep, err := runRaw(t, audit.Config{Endpoint: ts.URL + "/mcp", Timeout: time.Second, Deadline: 2500 * time.Millisecond})
	if !errors.Is(err, audit.ErrDeadline) {
		t.Errorf("Run: err %v, want ErrDeadline", err)
	}
	skipped := 0
	for _, r := range rep.Results {
		if r.Verdict == audit.Skip && strings.Contains(r.Detail, "deadline") {
			skipped++
		}
		if r.Verdict == audit.Fail && strings.Contains(strings.Join(r.Evidence, " "), "deadline") {
			t.Errorf("%s failed on a request the deadline cut: %s", r.ID, r.Detail)
		}
	}
	if skipped == 0 {
		t.Errorf("no check skipped for the deadline\n%s", dump(rep))
	}
}
