package client

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/prm"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr error
	}{
		{"https", Config{Resource: "https://mcp.example.com/mcp"}, nil},
		{"loopback http", Config{Resource: "http://127.0.0.1:8080/mcp"}, nil},
		{"localhost http", Config{Resource: "http://localhost/mcp"}, nil},
		{"ipv6 loopback", Config{Resource: "http://[::1]:9/mcp"}, nil},
		{"max retries 5", Config{Resource: "https://h/mcp", MaxRetries: 5}, nil},
		{"missing resource", Config{}, errInvalidConfig},
		{"relative", Config{Resource: "/mcp"}, errInvalidConfig},
		{"no host", Config{Resource: "https:///mcp"}, errInvalidConfig},
		{"other scheme", Config{Resource: "ftp://h/mcp"}, errInvalidConfig},
		{"plain http", Config{Resource: "http://mcp.example.com/mcp"}, errInvalidConfig},
		{"userinfo", Config{Resource: "https://u:p@h/mcp"}, errInvalidConfig},
		{"query", Config{Resource: "https://h/mcp?x=1"}, errInvalidConfig},
		{"fragment", Config{Resource: "https://h/mcp#f"}, errInvalidConfig},
		{"negative retries", Config{Resource: "https://h/mcp", MaxRetries: -1}, errInvalidConfig},
		{"too many retries", Config{Resource: "https://h/mcp", MaxRetries: 6}, errInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("New() error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestOriginOf(t *testing.T) {
	tests := []struct {
		name         string
		scheme, host string
		want         origin
		wantOK       bool
	}{
		{"https default port", "https", "Example.COM", origin{"https", "example.com", "443"}, true},
		{"https explicit default", "HTTPS", "example.com:443", origin{"https", "example.com", "443"}, true},
		{"http default", "http", "127.0.0.1", origin{"http", "127.0.0.1", "80"}, true},
		{"port", "http", "127.0.0.1:8080", origin{"http", "127.0.0.1", "8080"}, true},
		{"ipv6", "https", "[::1]:8443", origin{"https", "::1", "8443"}, true},
		{"ipv6 no port", "https", "[::1]", origin{"https", "::1", "443"}, true},
		{"empty port", "https", "h:", origin{"https", "h", "443"}, true},
		{"ws", "ws", "h", origin{}, false},
		{"no host", "https", "", origin{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := originOf(tt.scheme, tt.host)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("originOf(%q, %q) = %v, %v; want %v, %v", tt.scheme, tt.host, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

type respondFunc = func(*fake, int, http.ResponseWriter, *http.Request)

// TestStepUp drives the challenge handling against a loopback server and
// checks the outcome, the number of requests and Authorizer calls, and the
// scope sets requested.
func TestStepUp(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		if res := r.URL.Query().Get("res"); r.URL.Path == "/md" && res != "" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, metadataJSON(res, "files:read"))
			return
		}
		http.NotFound(w, r)
	}))
	// crossMD answers 401 with a resource_metadata URL on the other origin
	// whose document names res(f), then serves the scoped resource.
	crossMD := func(res func(*fake) string) respondFunc {
		return func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				fixed(401, `Bearer resource_metadata="`+other.URL+`/md?res=`+url.QueryEscape(res(f))+`"`)(f, n, w, r)
				return
			}
			scoped(f, n, w, r)
		}
	}
	self := func(f *fake) string { return f.resource }
	defer other.Close()
	const rm = `resource_metadata="{prm}"`

	tests := []struct {
		name     string
		respond  respondFunc
		prmDoc   func(*fake) string
		query    string
		granted  []string
		initial  oauth2.TokenSource
		authz    *fakeAuthz
		noAuthz  bool
		retries  int
		crossOK  bool // CrossOriginHTTPClient: the guarded client with loopback allowed
		denyX    bool // DenyCrossOriginMetadata
		wantErr  error
		wantErr2 error // a second error the first must also match
		// wantStatus is the status returned when wantErr is nil.
		wantStatus   int
		wantRequests int
		wantScopes   [][]string // one entry per Authorize call
		wantGranted  []string
		wantReason   string
		wantOther    int32 // requests to the other origin
	}{
		{
			name: "401 without token, then ok", wantStatus: 200, wantRequests: 2,
			wantScopes: [][]string{{"files:read"}}, wantGranted: []string{"files:read"}, wantReason: reasonUnauthorized,
		},
		{
			name: "401 without scope uses scopes_supported",
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(401, `Bearer `+rm)(f, n, w, r)
					return
				}
				scoped(f, n, w, r)
			},
			prmDoc:     func(f *fake) string { return metadataJSON(f.resource, "files:read") },
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"files:read"}},
		},
		{
			name: "401 without scope or scopes_supported asks for nothing",
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(401, `Bearer `+rm)(f, n, w, r)
					return
				}
				_, _ = io.WriteString(w, "ok")
			},
			prmDoc:     func(f *fake) string { return metadataJSON(f.resource) },
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{nil},
		},
		{
			name: "401 invalid_token unions granted scopes (SEP-2350)", initial: staticToken("expired"),
			granted: []string{"files:write"},
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(401, `Bearer error="invalid_token", scope="files:read", `+rm)(f, n, w, r)
					return
				}
				scoped(f, n, w, r)
			},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"files:write", "files:read"}},
		},
		{
			name: "403 adds a scope: granted ∪ challenged in stable order", query: "?need=c+a",
			initial: staticToken("a", "b"), granted: []string{"a", "b"},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"a", "b", "c"}},
			wantGranted: []string{"a", "b", "c"}, wantReason: reasonInsufficientScope,
		},
		{
			name: "403 with 2025-11-25 style union challenge", query: "?need=a+b+c",
			initial: staticToken("a", "b"), granted: []string{"a", "b"},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"a", "b", "c"}},
		},
		{
			name: "step-up twice accumulates", initial: staticToken("a"), granted: []string{"a"},
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				need := map[int]string{1: "b", 2: "c"}[n]
				if need != "" {
					challenge.Write(w, challenge.StepUp(f.prmURL, need))
					return
				}
				_, _ = io.WriteString(w, "ok")
			},
			wantStatus: 200, wantRequests: 3, wantScopes: [][]string{{"a", "b"}, {"a", "b", "c"}},
			wantGranted: []string{"a", "b", "c"},
		},
		{
			name: "endless 403 for the same scope stops after one authorization", initial: staticToken("a"),
			granted: []string{"a"}, respond: fixed(403, `Bearer error="insufficient_scope", scope="b", `+rm),
			wantErr: errStepUpLoop, wantRequests: 2, wantScopes: [][]string{{"a", "b"}},
		},
		{
			name: "403 for an already granted scope stops at once", initial: staticToken("a", "b"),
			granted: []string{"a", "b"}, respond: fixed(403, `Bearer error="insufficient_scope", scope="b", `+rm),
			wantErr: errStepUpLoop, wantRequests: 1,
		},
		{
			name: "403 for a scope the AS declined stops (refresh cannot widen)", query: "?need=a+b",
			initial: staticToken("a"), granted: []string{"a"},
			authz:   &fakeAuthz{withScope: true, grant: func([]string) []string { return []string{"a"} }},
			wantErr: errStepUpLoop, wantRequests: 2, wantScopes: [][]string{{"a", "b"}}, wantGranted: []string{"a"},
		},
		{
			name: "403 without scope and no scopes_supported stops", initial: staticToken("a"),
			respond: fixed(403, `Bearer error="insufficient_scope", `+rm),
			prmDoc:  func(f *fake) string { return metadataJSON(f.resource) },
			wantErr: errStepUpLoop, wantRequests: 1,
		},
		{
			name: "endless 403 with a new scope each time exhausts retries", initial: staticToken(),
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				challenge.Write(w, challenge.StepUp(f.prmURL, fmt.Sprintf("s%d", n)))
			},
			wantErr: errRetriesExhausted, wantRequests: 3, wantScopes: [][]string{{"s1"}, {"s1", "s2"}},
		},
		{
			name: "endless 403 with new scopes, MaxRetries 5", initial: staticToken(), retries: 5,
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				challenge.Write(w, challenge.StepUp(f.prmURL, fmt.Sprintf("s%d", n)))
			},
			wantErr: errRetriesExhausted, wantRequests: 6,
			wantScopes: [][]string{{"s1"}, {"s1", "s2"}, {"s1", "s2", "s3"}, {"s1", "s2", "s3", "s4"}, {"s1", "s2", "s3", "s4", "s5"}},
		},
		{
			name: "endless 401 stops after one authorization", respond: fixed(401, `Bearer scope="files:read", `+rm),
			wantErr: errStepUpLoop, wantRequests: 2, wantScopes: [][]string{{"files:read"}},
		},
		{
			name: "403 without insufficient_scope is returned", respond: fixed(403, `Bearer error="invalid_token", `+rm),
			wantStatus: 403, wantRequests: 1,
		},
		{
			name: "403 without challenge is returned", respond: fixed(403),
			wantStatus: 403, wantRequests: 1,
		},
		{
			name: "401 invalid_request is returned", respond: fixed(401, `Bearer error="invalid_request", `+rm),
			wantStatus: 401, wantRequests: 1,
		},
		{
			name: "malformed: unterminated quote", respond: fixed(401, `Bearer scope="files:read`),
			wantStatus: 401, wantRequests: 1,
		},
		{
			name: "malformed: duplicate parameter", respond: fixed(403, `Bearer error="insufficient_scope", error="insufficient_scope"`),
			wantStatus: 403, wantRequests: 1,
		},
		{
			name: "malformed: garbage", respond: fixed(401, `=,"\`),
			wantStatus: 401, wantRequests: 1,
		},
		{
			name: "malformed second line spoils all", respond: fixed(401, `Bearer `+rm, `Bearer realm="x`),
			wantStatus: 401, wantRequests: 1,
		},
		{
			name: "no Bearer challenge", respond: fixed(401, `DPoP algs="ES256", error="invalid_token"`, `Basic realm="x"`),
			wantStatus: 401, wantRequests: 1,
		},
		{
			name: "multiple Bearer challenges: the first wins", initial: staticToken("a"), granted: []string{"a"},
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(403, `DPoP error="insufficient_scope", scope="z", Bearer error="insufficient_scope", scope="b", `+rm+`, Bearer error="insufficient_scope", scope="c"`)(f, n, w, r)
					return
				}
				_, _ = io.WriteString(w, "ok")
			},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"a", "b"}},
		},
		{
			name: "challenges over several header lines", initial: staticToken("a"), granted: []string{"a"},
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(403, `Basic realm="r"`, `Bearer error="insufficient_scope", scope="b", `+rm)(f, n, w, r)
					return
				}
				_, _ = io.WriteString(w, "ok")
			},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"a", "b"}},
		},
		{
			name: "offline_access in a challenge is dropped", initial: staticToken("a"), granted: []string{"a", "offline_access"},
			respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(403, `Bearer error="insufficient_scope", scope="offline_access b", `+rm)(f, n, w, r)
					return
				}
				_, _ = io.WriteString(w, "ok")
			},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"a", "offline_access", "b"}},
		},
		{
			name:    "resource_metadata on another origin: the default guard refuses loopback",
			respond: fixed(401, `Bearer resource_metadata="`+other.URL+`/.well-known/oauth-protected-resource/mcp"`),
			wantErr: errMetadata, wantErr2: fetch.ErrForbiddenAddress, wantRequests: 1,
		},
		{
			name:    "resource_metadata on another port of the same host: guarded",
			respond: fixed(401, `Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`),
			wantErr: errMetadata, wantErr2: fetch.ErrForbiddenAddress, wantRequests: 1,
		},
		{
			name: "relative resource_metadata", respond: fixed(401, `Bearer resource_metadata="/.well-known/oauth-protected-resource/mcp"`),
			wantErr: errMetadata, wantErr2: errMetadataFetch, wantRequests: 1,
		},
		{
			name: "resource_metadata on another origin is used (MCP MUST)", respond: crossMD(self), crossOK: true,
			wantStatus: 200, wantRequests: 2, wantOther: 1, wantScopes: [][]string{{"files:read"}},
		},
		{
			name: "cross-origin document must name the resource", respond: crossMD(func(f *fake) string { return f.resource + "/other" }), crossOK: true,
			wantErr: errResourceMismatch, wantErr2: prm.ErrResourceMismatch, wantRequests: 1, wantOther: 1,
		},
		{
			name:    "cross-origin fetch failure",
			respond: fixed(401, `Bearer resource_metadata="`+other.URL+`/x"`), crossOK: true,
			wantErr: errMetadata, wantErr2: errMetadataFetch, wantRequests: 1, wantOther: 1,
		},
		{
			name: "DenyCrossOriginMetadata refuses", respond: crossMD(self), crossOK: true, denyX: true,
			wantErr: errCrossOrigin, wantRequests: 1,
		},
		{
			name: "metadata names another resource", prmDoc: func(f *fake) string { return metadataJSON(f.resource + "/other") },
			wantErr: errResourceMismatch, wantErr2: prm.ErrResourceMismatch, wantRequests: 1,
		},
		{
			name: "metadata invalid", prmDoc: func(f *fake) string { return `{"resource":"` + f.resource + `"}` },
			wantErr: errMetadata, wantErr2: prm.ErrInvalidMetadata, wantRequests: 1,
		},
		{
			name: "no resource_metadata: well-known discovery", respond: func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					fixed(401, `Bearer scope="files:read"`)(f, n, w, r)
					return
				}
				scoped(f, n, w, r)
			},
			wantStatus: 200, wantRequests: 2, wantScopes: [][]string{{"files:read"}},
		},
		{
			name: "authorizer error", authz: &fakeAuthz{err: errors.New("user declined")},
			wantErr: errAuthorize, wantRequests: 1, wantScopes: [][]string{{"files:read"}},
		},
		{
			name: "no authorizer: 401 returned", noAuthz: true, wantStatus: 401, wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			otherHits.Store(0)
			f := newFake(t)
			f.respond, f.prmDoc = tt.respond, tt.prmDoc
			a := tt.authz
			if a == nil {
				a = &fakeAuthz{}
			}
			cfg := Config{
				Resource: f.resource, TokenSource: tt.initial, GrantedScopes: tt.granted,
				MaxRetries: tt.retries, DenyCrossOriginMetadata: tt.denyX, Authorizer: a,
			}
			if tt.crossOK {
				cfg.CrossOriginHTTPClient = asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
			}
			if tt.noAuthz {
				cfg.Authorizer = nil
			}
			tr, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Get(f.resource + tt.query)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) ||
				(tt.wantErr2 != nil && !errors.Is(err, tt.wantErr2)) {
				t.Fatalf("error = %v, want %v (and %v)", err, tt.wantErr, tt.wantErr2)
			}
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
				}
				if resp.StatusCode != 200 && len(b) == 0 {
					t.Error("returned response has no body")
				}
			}
			if resp != nil && err != nil {
				t.Error("response returned with an error")
			}
			if reqs, _ := f.counts(); reqs != tt.wantRequests {
				t.Errorf("requests = %d, want %d", reqs, tt.wantRequests)
			}
			if got := otherHits.Load(); got != tt.wantOther {
				t.Errorf("requests to the other origin = %d, want %d", got, tt.wantOther)
			}
			if got := a.scopes(); !reflect.DeepEqual(got, tt.wantScopes) {
				t.Errorf("Authorize scopes = %q, want %q", got, tt.wantScopes)
			}
			if tt.wantGranted != nil && !reflect.DeepEqual(tr.grantedScopes(), tt.wantGranted) {
				t.Errorf("grantedScopes() = %q, want %q", tr.grantedScopes(), tt.wantGranted)
			}
			if tt.wantReason != "" && a.calls[0].Reason != tt.wantReason {
				t.Errorf("Reason = %q, want %q", a.calls[0].Reason, tt.wantReason)
			}
			for _, c := range a.calls {
				if c.Resource != f.resource || c.ResourceMetadata == nil || c.ResourceMetadata.Resource != f.resource {
					t.Errorf("AuthorizeRequest resource = %q, metadata %+v", c.Resource, c.ResourceMetadata)
				}
			}
			var ce *Error
			if errors.As(err, &ce) {
				if challenged := ce.Reason == "step_up_loop" || ce.Reason == "retries_exhausted" || ce.Reason == "cross_origin"; challenged != (ce.StatusCode == 401 || ce.StatusCode == 403) {
					t.Errorf("Error.StatusCode = %d", ce.StatusCode)
				}
				if strings.Contains(ce.Error(), "127.0.0.1") || strings.Contains(ce.Error(), "scope=") {
					t.Errorf("error text contains server values: %v", err)
				}
			}
		})
	}
}

func TestChallengeErrorCarriesChallenge(t *testing.T) {
	f := newFake(t)
	f.respond = fixed(403, `Bearer error="insufficient_scope", scope="b", resource_metadata="{prm}"`)
	tr, err := New(Config{Resource: f.resource, TokenSource: staticToken("a", "b"), GrantedScopes: []string{"a", "b"}, Authorizer: &fakeAuthz{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&http.Client{Transport: tr}).Get(f.resource)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want *Error", err)
	}
	if ce.StatusCode != 403 || !reflect.DeepEqual(ce.Challenge.Scope, []string{"b"}) ||
		ce.Challenge.ResourceMetadata != f.prmURL || !reflect.DeepEqual(ce.Scopes, []string{"a", "b"}) {
		t.Errorf("Error = %+v", ce)
	}
	if got, want := err.Error(), "Get \""+f.resource+"\": client: step-up loop: challenge adds no new scope (status 403)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTokenSourceError(t *testing.T) {
	f := newFake(t)
	src := oauth2.ReuseTokenSource(nil, errSource{errors.New("refresh failed")})
	tr, err := New(Config{Resource: f.resource, TokenSource: src, Authorizer: &fakeAuthz{}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, f.resource, strings.NewReader("x"))
	_, err = tr.RoundTrip(req)
	if !errors.Is(err, errTokenSource) {
		t.Fatalf("error = %v, want errTokenSource", err)
	}
	if reqs, _ := f.counts(); reqs != 0 {
		t.Errorf("requests = %d, want 0", reqs)
	}
}
