package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
)

// serverAuthorizer mints "tok@<first authorization server>" tokens and
// records every request.
type serverAuthorizer struct {
	mu    sync.Mutex
	calls []AuthorizeRequest
}

func (a *serverAuthorizer) Authorize(_ context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, req)
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok@" + req.ResourceMetadata.AuthorizationServers[0]}), nil
}

// TestAuthorizationServerMigration: a 401 for a token the resource
// accepted before makes the transport read the metadata again, so that a
// resource that moved to another authorization server is authorized there,
// and tells the Authorizer that the servers changed (MCP 2026-07-28,
// SEP-2352). On ebeaaa4 the transport asked the old server again from its
// cached metadata and stopped with errStepUpLoop.
func TestAuthorizationServerMigration(t *testing.T) {
	const as1, as2 = "https://as1.example.com", "https://as2.example.com"
	tests := []struct {
		name string
		// after is the authorization server of the metadata once the
		// first token was accepted; valid reports whether the resource
		// then accepts a token.
		after       string
		valid       func(authz string) bool
		wantServers []string // the first server of each authorization
		wantChanged []bool
		wantPRMHits int
	}{
		{
			name:  "moved to another server",
			after: as2, valid: func(a string) bool { return a == "Bearer tok@"+as2 },
			wantServers: []string{as1, as2}, wantChanged: []bool{false, true}, wantPRMHits: 2,
		},
		{
			name:  "same server, token revoked",
			after: as1, valid: func() func(string) bool {
				var mu sync.Mutex
				seen := 0
				return func(string) bool { // the second presentation of the first token is refused
					mu.Lock()
					defer mu.Unlock()
					seen++
					return seen != 1
				}
			}(),
			wantServers: []string{as1, as1}, wantChanged: []bool{false, false}, wantPRMHits: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			var mu sync.Mutex
			migrated := false
			server := func() string {
				mu.Lock()
				defer mu.Unlock()
				if migrated {
					return tt.after
				}
				return as1
			}
			f.prmDoc = func(f *fake) string {
				b, _ := json.Marshal(map[string]any{"resource": f.resource, "authorization_servers": []string{server()}})
				return string(b)
			}
			f.respond = func(f *fake, _ int, w http.ResponseWriter, r *http.Request) {
				authz := r.Header.Get("Authorization")
				if authz == "" {
					challenge.Write(w, challenge.Challenge{ResourceMetadata: f.prmURL, Scope: []string{"mcp:basic"}})
					return
				}
				mu.Lock()
				first := !migrated
				migrated = true
				mu.Unlock()
				if !first && !tt.valid(authz) {
					challenge.Write(w, challenge.Challenge{ResourceMetadata: f.prmURL, Scope: []string{"mcp:basic"}, Error: challenge.InvalidToken})
					return
				}
				_, _ = io.WriteString(w, "ok")
			}
			a := &serverAuthorizer{}
			tr, err := New(Config{Resource: f.resource, Authorizer: a})
			if err != nil {
				t.Fatal(err)
			}
			hc := &http.Client{Transport: tr}
			for i := range 2 {
				resp, err := hc.Post(f.resource, "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d: status %d, want 200", i+1, resp.StatusCode)
				}
			}
			var servers []string
			var changed []bool
			for _, c := range a.calls {
				servers = append(servers, c.ResourceMetadata.AuthorizationServers[0])
				changed = append(changed, c.AuthorizationServersChanged)
			}
			if !reflect.DeepEqual(servers, tt.wantServers) || !reflect.DeepEqual(changed, tt.wantChanged) {
				t.Errorf("authorizations at %v (changed %v), want %v (%v)", servers, changed, tt.wantServers, tt.wantChanged)
			}
			if _, hits := f.counts(); hits != tt.wantPRMHits {
				t.Errorf("metadata fetched %d times, want %d", hits, tt.wantPRMHits)
			}
		})
	}
}

// TestMigrationNeedsAcceptedToken: a 401 for a token that was never
// accepted reads the cached metadata (no refetch per challenge).
func TestMigrationNeedsAcceptedToken(t *testing.T) {
	f := newFake(t)
	f.respond = fixed(http.StatusUnauthorized, `Bearer resource_metadata="{prm}", scope="files:read"`)
	tr, err := New(Config{Resource: f.resource, Authorizer: &fakeAuthz{}, TokenSource: staticToken("x"), MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&http.Client{Transport: tr}).Get(f.resource)
	if err == nil {
		t.Fatal("want an error")
	}
	if _, hits := f.counts(); hits != 1 {
		t.Errorf("metadata fetched %d times, want 1", hits)
	}
}

// TestAuthorizeResource: the resource indicator the Authorizer gets is the
// metadata's "resource" value exactly (RFC 8707 with RFC 9728 §3.3): the
// origin when the document came from the root well-known URL. On ebeaaa4
// it was always Config.Resource.
func TestAuthorizeResource(t *testing.T) {
	tests := []struct {
		name     string
		inserted bool // serve the path-inserted document, else only the root one
		want     func(origin string) string
	}{
		{"path-inserted document", true, func(o string) string { return o + "/mcp" }},
		{"root document", false, func(o string) string { return o }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				doc := func(resource string) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, metadataJSON(resource))
				}
				switch {
				case r.URL.Path == "/.well-known/oauth-protected-resource/mcp" && tt.inserted:
					doc(srv.URL + "/mcp")
				case r.URL.Path == "/.well-known/oauth-protected-resource" && !tt.inserted:
					doc(srv.URL)
				case r.URL.Path == "/mcp" && r.Header.Get("Authorization") == "":
					w.Header().Set("WWW-Authenticate", `Bearer`)
					w.WriteHeader(http.StatusUnauthorized)
				case r.URL.Path == "/mcp":
					_, _ = io.WriteString(w, "ok")
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			a := &fakeAuthz{}
			tr, err := New(Config{Resource: srv.URL + "/mcp", Authorizer: a})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(a.calls) != 1 {
				t.Fatalf("status %d after %d authorizations, want 200 after 1", resp.StatusCode, len(a.calls))
			}
			if got, want := a.calls[0].Resource, tt.want(srv.URL); got != want {
				t.Errorf("AuthorizeRequest.Resource = %q, want %q", got, want)
			}
		})
	}
}
