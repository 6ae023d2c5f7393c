package audit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
)

// TestWithoutCredentials is what CI runs: the example server, no token.
// Every check that can run passes; the others are skipped, never failed.
func TestWithoutCredentials(t *testing.T) {
	e := newEnv(t, exampleServer(t, nil), nil)
	rep, failed := runAudit(t, e, func(c *audit.Config) { c.Token, c.Token2 = "", "" })
	if len(failed) > 0 {
		t.Fatalf("failing checks %v\n%s", failed, dump(rep))
	}
	for _, r := range rep.Results {
		if r.Credentials && r.Verdict != audit.Skip {
			t.Errorf("%s: verdict %s without credentials, want skip", r.ID, r.Verdict)
		}
		if !r.Credentials && r.Verdict != audit.Pass && !notProxied(r) {
			t.Errorf("%s: verdict %s (%s), want pass", r.ID, r.Verdict, r.Detail)
		}
	}
	if rep.Credentials != "none" {
		t.Errorf("Credentials = %q, want none", rep.Credentials)
	}
}

// TestNoTokenInOutput renders every format of a credentialed run and looks
// for the tokens and anything JWT-shaped.
func TestNoTokenInOutput(t *testing.T) {
	e := newEnv(t, exampleServer(t, nil), nil)
	rep, _ := runAudit(t, e, nil)
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
		for _, secret := range []string{e.tokA, e.tokB, e.tokA[len(e.tokA)-40:]} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output contains a token", name)
			}
		}
		if strings.Contains(out, "eyJ") {
			t.Errorf("%s output contains something JWT-shaped", name)
		}
	}
	if !strings.Contains(table.String(), "Bearer <token>") || !strings.Contains(table.String(), "Bearer <forged alg:none>") {
		t.Errorf("table does not name the tokens by label:\n%s", table.String())
	}
}

// TestHangingServer: a server that never answers costs one timeout per
// request and the run reports it unreachable. The server answers only
// when the client goes, so the request ends by a deadline; which one the
// error tells: ErrUnreachable, the request's 200 ms Timeout; the run's
// Deadline, 300 times as long, would give ErrDeadline. No bound on the
// elapsed real time, which a loaded machine stretches.
func TestHangingServer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
		<-r.Context().Done()
	}))
	defer ts.Close()
	a, err := audit.New(audit.Config{Endpoint: ts.URL + "/mcp", Timeout: 200 * time.Millisecond, Deadline: time.Minute, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background())
	if !errors.Is(err, audit.ErrUnreachable) || errors.Is(err, audit.ErrDeadline) {
		t.Fatalf("Run: err %v, want ErrUnreachable (the request's Timeout, not the run's Deadline)", err)
	}
	if rep.Requests != 1 {
		t.Errorf("Requests = %d, want 1", rep.Requests)
	}
	if r := result(rep, audit.CH401); r.Verdict != audit.Fail {
		t.Errorf("CH-401: %s, want fail", r.Verdict)
	}
}

// TestHangOnToken: a server that hangs on tokens fails the token checks
// with "no answer", each within the timeout.
func TestHangOnToken(t *testing.T) {
	e := newEnv(t, outer(exampleServer(t, nil), func(_ *env, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer eyJ") {
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
				return
			}
			next.ServeHTTP(w, r)
		})
	}), nil)
	_, failed := runAudit(t, e, func(c *audit.Config) {
		c.Token, c.Token2, c.Timeout = "", "", 300*time.Millisecond
	})
	for _, id := range []string{audit.TOKAlgNone, audit.TOKUnknownKey, audit.TOKExpired, audit.TOKWrongAud, audit.TOKHS256PubKey, audit.TOKOversized} {
		if !contains(failed, id) {
			t.Errorf("%s did not fail", id)
		}
	}
}

// TestRedirectsStayOnOrigin: a metadata URL that redirects to another
// origin is not followed.
func TestRedirectsStayOnOrigin(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	e := newEnv(t, outer(exampleServer(t, nil), func(_ *env, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource/mcp") {
				http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
				return
			}
			next.ServeHTTP(w, r)
		})
	}), nil)
	rep, failed := runAudit(t, e, func(c *audit.Config) { c.Token, c.Token2 = "", "" })
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want 0", n)
	}
	if !contains(failed, audit.PRMPathInserted) || !contains(failed, audit.PRMDiscovery) {
		t.Errorf("failing %v, want PRM-PATH-INSERTED and PRM-DISCOVERY\n%s", failed, dump(rep))
	}
}

// TestBudget: the request budget is a hard bound; checks it cuts off are
// skipped, not failed.
func TestBudget(t *testing.T) {
	e := newEnv(t, exampleServer(t, nil), nil)
	rep, failed := runAudit(t, e, func(c *audit.Config) { c.MaxRequests = 5 })
	if rep.Requests != 5 {
		t.Errorf("Requests = %d, want 5", rep.Requests)
	}
	if len(failed) > 0 {
		t.Errorf("failing %v, want none (cut-off checks are skipped)\n%s", failed, dump(rep))
	}
	if r := result(rep, audit.TOKAlgNone); r.Verdict != audit.Skip {
		t.Errorf("TOK-ALG-NONE: %s, want skip", r.Verdict)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestClientCredentials: without a token, the client credentials grant
// gets one (RFC 6749 §4.4, client_secret_basic, resource = endpoint), and
// neither the token nor the secret reaches the report. After a refusal,
// a second grant with the challenged scopes shows whether one challenge
// named them all.
func TestClientCredentials(t *testing.T) {
	tests := []struct {
		name       string
		build      func(*testing.T) func(*env) http.Handler
		wantStepUp audit.Verdict
	}{
		{"example server", func(t *testing.T) func(*env) http.Handler { return exampleServer(t, nil) }, audit.Pass},
		{"scopes one challenge at a time", func(t *testing.T) func(*env) http.Handler {
			return outer(notesStack(t, stack{writeScopes: []string{writeScope, adminScope}}), oneScopeAtATime)
		}, audit.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.build(t), nil)
			const id, secret = "svc client", "s3cret:value"
			var mu sync.Mutex
			var issued []string
			tokenTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, p, ok := r.BasicAuth()
				if err := r.ParseForm(); err != nil || !ok || r.Method != http.MethodPost {
					http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
					return
				}
				// RFC 6749 §2.3.1: the credentials are form-encoded inside Basic.
				if u != "svc+client" || p != "s3cret%3Avalue" || r.PostForm.Get("grant_type") != "client_credentials" ||
					r.PostForm.Get("resource") != e.mcpURL {
					http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
					return
				}
				tok := e.token(t, "svc", "t1", strings.Fields(r.PostForm.Get("scope"))...)
				mu.Lock()
				issued = append(issued, tok)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"access_token":"`+tok+`","token_type":"Bearer","expires_in":300}`)
			}))
			defer tokenTS.Close()
			rep, _ := runAudit(t, e, func(c *audit.Config) {
				c.Token, c.Token2 = "", ""
				c.ClientCredentials = audit.ClientCredentials{TokenURL: tokenTS.URL + "/token", ClientID: id, ClientSecret: secret, Scopes: []string{baseScope, readScope}}
				// The example lists only the tools a token may call: name
				// the hidden one.
				c.Tools = []string{"whoami", "notes_list", "notes_write"}
			})
			mu.Lock()
			defer mu.Unlock()
			if len(issued) != 2 {
				t.Errorf("%d grants, want 2 (the token, then the stepped-up one)", len(issued))
			}
			if r := result(rep, audit.CredAccepted); r.Verdict != audit.Pass {
				t.Fatalf("CRED-ACCEPTED: %s %s\n%s", r.Verdict, r.Detail, dump(rep))
			}
			if r := result(rep, audit.StepUp); r.Verdict != tt.wantStepUp {
				t.Errorf("STEP-UP: %s (%s), want %s\n%s", r.Verdict, r.Detail, tt.wantStepUp, strings.Join(r.Evidence, "\n"))
			}
			if rep.Credentials != "token" {
				t.Errorf("Credentials = %q, want token", rep.Credentials)
			}
			var js bytes.Buffer
			if err := audit.WriteJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			for _, tok := range issued {
				if strings.Contains(js.String(), tok) {
					t.Error("the report contains a token")
				}
			}
			if strings.Contains(js.String(), secret) {
				t.Error("the report contains the client secret")
			}
		})
	}
}
