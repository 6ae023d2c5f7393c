package asmeta

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// doc is one canned answer of the fake metadata server.
type doc struct {
	status int    // 0 => 200
	ctype  string // "" => application/json
	body   string // "%ISSUER%" and "%ORIGIN%" are replaced
}

// fakeAS serves canned answers by path and records the paths requested.
type fakeAS struct {
	srv  *httptest.Server
	mu   sync.Mutex
	docs map[string]doc
	hits []string
}

func newFakeAS(t *testing.T) *fakeAS {
	t.Helper()
	f := &fakeAS{docs: map[string]doc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) set(path string, d doc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs[path] = d
}

func (f *fakeAS) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hits...)
}

func (f *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits = append(f.hits, r.URL.EscapedPath())
	d, ok := f.docs[r.URL.EscapedPath()]
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	ct := d.ctype
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if d.status != 0 {
		w.WriteHeader(d.status)
	}
	_, _ = w.Write([]byte(strings.ReplaceAll(d.body, "%ORIGIN%", f.srv.URL)))
}

// metaJSON renders a minimal valid document for issuer.
func metaJSON(issuer, jwks string) string {
	b, _ := json.Marshal(Metadata{
		Issuer:                 issuer,
		AuthorizationEndpoint:  issuer + "/authorize",
		TokenEndpoint:          issuer + "/token",
		JWKSURI:                jwks,
		ResponseTypesSupported: []string{"code"},
	})
	return string(b)
}

func TestDiscover(t *testing.T) {
	const (
		oauthRoot = "/.well-known/oauth-authorization-server"
		oidcRoot  = "/.well-known/openid-configuration"
	)
	tests := []struct {
		name     string
		path     string // issuer path, appended to the server origin
		docs     map[string]doc
		wantErr  error
		wantHits []string
	}{
		{
			name:     "rfc8414 root first",
			docs:     map[string]doc{oauthRoot: {body: metaJSON("%ORIGIN%", "%ORIGIN%/jwks")}, oidcRoot: {body: `{}`}},
			wantHits: []string{oauthRoot},
		},
		{
			name:     "oidc root second",
			docs:     map[string]doc{oidcRoot: {body: metaJSON("%ORIGIN%", "%ORIGIN%/jwks")}},
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "path issuer: oidc appended third",
			path:     "/tenant1",
			docs:     map[string]doc{"/tenant1" + oidcRoot: {body: metaJSON("%ORIGIN%/tenant1", "%ORIGIN%/jwks")}},
			wantHits: []string{oauthRoot + "/tenant1", oidcRoot + "/tenant1", "/tenant1" + oidcRoot},
		},
		{
			name:     "path issuer: rfc8414 inserted first",
			path:     "/tenant1",
			docs:     map[string]doc{oauthRoot + "/tenant1": {body: metaJSON("%ORIGIN%/tenant1", "")}},
			wantHits: []string{oauthRoot + "/tenant1"},
		},
		{
			name:     "server error then success",
			docs:     map[string]doc{oauthRoot: {status: 500, body: `{}`}, oidcRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "wrong media type skipped",
			docs:     map[string]doc{oauthRoot: {ctype: "text/html", body: metaJSON("%ORIGIN%", "")}, oidcRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "invalid json skipped",
			docs:     map[string]doc{oauthRoot: {body: `{"issuer":`}, oidcRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "too large skipped",
			docs:     map[string]doc{oauthRoot: {body: `{"x":"` + strings.Repeat("a", fetch.MaxServerMetadataBytes) + `"}`}},
			wantErr:  ErrNotFound,
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "nothing anywhere",
			path:     "/t",
			wantErr:  ErrNotFound,
			wantHits: []string{oauthRoot + "/t", oidcRoot + "/t", "/t" + oidcRoot},
		},
		{
			name:     "mix-up alone is rejected",
			docs:     map[string]doc{oauthRoot: {body: metaJSON("https://honest.example", "https://honest.example/jwks")}},
			wantErr:  ErrIssuerMismatch,
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name: "mix-up skipped, matching document later wins",
			path: "/tenant1",
			docs: map[string]doc{
				oauthRoot + "/tenant1": {body: metaJSON("%ORIGIN%", "%ORIGIN%/jwks")}, // catch-all answering for the origin
				"/tenant1" + oidcRoot:  {body: metaJSON("%ORIGIN%/tenant1", "%ORIGIN%/tenant1/jwks")},
			},
			wantHits: []string{oauthRoot + "/tenant1", oidcRoot + "/tenant1", "/tenant1" + oidcRoot},
		},
		{
			name:     "trailing slash is significant",
			path:     "/",
			docs:     map[string]doc{oauthRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantErr:  ErrIssuerMismatch,
			wantHits: []string{oauthRoot, oidcRoot},
		},
		{
			name:     "insecure jwks_uri ends discovery",
			docs:     map[string]doc{oauthRoot: {body: metaJSON("%ORIGIN%", "http://jwks.example/keys")}, oidcRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantErr:  ErrInvalidMetadata,
			wantHits: []string{oauthRoot},
		},
		{
			name:     "redirect not followed",
			docs:     map[string]doc{oauthRoot: {status: http.StatusFound, body: `{}`}, oidcRoot: {body: metaJSON("%ORIGIN%", "")}},
			wantHits: []string{oauthRoot, oidcRoot},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAS(t)
			for p, d := range tt.docs {
				d.body = strings.ReplaceAll(d.body, "%ORIGIN%", f.srv.URL)
				f.set(p, d)
			}
			issuer := f.srv.URL + tt.path
			m, err := Discover(t.Context(), NewGuardedClient(GuardConfig{InsecureAllowLoopback: true}), issuer)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Discover error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && m.Issuer != issuer {
				t.Errorf("Issuer = %q, want %q", m.Issuer, issuer)
			}
			if err != nil && m != nil {
				t.Errorf("Discover returned metadata with error %v", err)
			}
			if got := f.requests(); strings.Join(got, " ") != strings.Join(tt.wantHits, " ") {
				t.Errorf("requests\n got %q\nwant %q", got, tt.wantHits)
			}
		})
	}
}

func TestDiscoverInvalidIssuer(t *testing.T) {
	f := newFakeAS(t)
	for _, issuer := range []string{"http://auth.example.com", f.srv.URL + "?q=1", f.srv.URL + "#x", ""} {
		if _, err := Discover(t.Context(), f.srv.Client(), issuer); !errors.Is(err, ErrInvalidIssuer) {
			t.Errorf("Discover(%q) error = %v, want %v", issuer, err, ErrInvalidIssuer)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestDiscoverStopsOnCancel(t *testing.T) {
	f := newFakeAS(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Discover(ctx, nil, f.srv.URL+"/t"); !errors.Is(err, ErrNotFound) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Discover error = %v, want %v and %v", err, ErrNotFound, context.Canceled)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestDiscoverStopsOnForbiddenAddress(t *testing.T) {
	f := newFakeAS(t)
	c := fetch.NewClient(fetch.ClientConfig{GuardAddresses: true})
	_, err := Discover(t.Context(), c, f.srv.URL+"/t")
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, fetch.ErrForbiddenAddress) {
		t.Fatalf("Discover error = %v, want %v and %v", err, ErrNotFound, fetch.ErrForbiddenAddress)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

// TestDiscoverSpecMixUp replays spec-auth.md §5.5: a document at
// https://attacker.example/.well-known/oauth-authorization-server naming
// "https://honest.example" must be rejected.
func TestDiscoverSpecMixUp(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "attacker.example" || r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"https://honest.example","jwks_uri":"https://honest.example/jwks","response_types_supported":["code"]}`))
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}
	tr.TLSClientConfig.ServerName = "example.com" // a name in httptest's certificate
	c := &http.Client{Transport: tr}

	m, err := Discover(t.Context(), c, "https://attacker.example")
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("Discover error = %v, want %v", err, ErrIssuerMismatch)
	}
	if m != nil {
		t.Fatalf("Discover returned %+v, want nil", m)
	}
}
