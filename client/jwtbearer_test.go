package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/prm"
)

// fakeJWTBearer is a loopback enterprise identity provider (token
// exchange at /idp/token) and MCP authorization server (JWT bearer grant
// at /token) that records every form.
type fakeJWTBearer struct {
	srv       *httptest.Server
	grants    []string // grant_types_supported
	idpStatus int      // non-zero: the IdP answers {"error":idpError} with it
	idpError  string
	issued    string // issued_token_type of the IdP's answer
	asStatus  int    // non-zero: the AS answers {"error":asError} with it
	asError   string

	mu       sync.Mutex
	idpForms []url.Values
	idpBasic []string
	asForms  []url.Values
	asBasic  []string
	jags     int
}

func newFakeJWTBearer(t *testing.T) *fakeJWTBearer {
	t.Helper()
	f := &fakeJWTBearer{grants: []string{grantTypeJWTBearer}, issued: tokenTypeIDJAG}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"issuer": f.srv.URL, "token_endpoint": f.srv.URL + "/token", "response_types_supported": []string{"code"},
				"grant_types_supported":                 f.grants,
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"},
			})
		case "/idp/token":
			f.idpForms = append(f.idpForms, r.PostForm)
			f.idpBasic = append(f.idpBasic, r.Header.Get("Authorization"))
			if f.idpStatus != 0 {
				w.WriteHeader(f.idpStatus)
				_, _ = w.Write([]byte(`{"error":"` + f.idpError + `"}`))
				return
			}
			f.jags++
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "jag-" + string(rune('0'+f.jags)), "issued_token_type": f.issued, "token_type": "N_A", "expires_in": 300})
		case "/token":
			f.asForms = append(f.asForms, r.PostForm)
			f.asBasic = append(f.asBasic, r.Header.Get("Authorization"))
			if f.asStatus != 0 {
				w.WriteHeader(f.asStatus)
				_, _ = w.Write([]byte(`{"error":"` + f.asError + `"}`))
				return
			}
			_, _ = w.Write([]byte(`{"access_token":"at-` + r.PostForm.Get("assertion") + `","token_type":"Bearer","expires_in":3600}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeJWTBearer) request() AuthorizeRequest {
	return AuthorizeRequest{
		Resource:         "https://mcp.example.com/mcp",
		ResourceMetadata: &prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{f.srv.URL}},
		Scopes:           []string{"mcp:read"},
	}
}

func TestIDJAG(t *testing.T) {
	loopback := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	tests := []struct {
		name      string
		setup     func(f *fakeJWTBearer)
		wantErr   error
		wantCode  string // the RFC 6749 §5.2 error code of the failure
		wantIdP   int    // token exchange requests
		wantAS    int    // JWT bearer grant requests
		wantToken string
	}{
		{name: "exchange and grant", wantIdP: 1, wantAS: 1, wantToken: "at-jag-1"},
		{name: "identity provider refuses", setup: func(f *fakeJWTBearer) { f.idpStatus, f.idpError = 400, "invalid_grant" },
			wantErr: errTokenExchange, wantCode: "invalid_grant", wantIdP: 1},
		{name: "not an ID-JAG", setup: func(f *fakeJWTBearer) { f.issued = tokenTypeAccessToken },
			wantErr: errTokenExchange, wantIdP: 1},
		{name: "authorization server refuses", setup: func(f *fakeJWTBearer) { f.asStatus, f.asError = 400, "invalid_grant" },
			wantErr: errAuthorize, wantCode: "invalid_grant", wantIdP: 1, wantAS: 1},
		{name: "client refused", setup: func(f *fakeJWTBearer) { f.asStatus, f.asError = 401, "invalid_client" },
			wantErr: errAuthorize, wantCode: "invalid_client", wantIdP: 1, wantAS: 1},
		{name: "no JWT bearer grant", setup: func(f *fakeJWTBearer) { f.grants = []string{"authorization_code"} },
			wantErr: errAuthorize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeJWTBearer(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			a, err := NewIDJAG(IDJAGConfig{
				Client:      ClientCredentialsConfig{ClientID: "mcp-client", ClientSecret: "s3cret", Issuer: f.srv.URL, DiscoveryHTTPClient: loopback},
				IdPTokenURL: f.srv.URL + "/idp/token", IdPClientID: "idp-client", IdPClientSecret: "idp-secret",
				IdentityAssertion: func(context.Context) (string, error) { return "the-id-token", nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := a.Authorize(context.Background(), f.request())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Authorize: got %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), "jag-") || strings.Contains(err.Error(), "the-id-token") || strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error text %q shows an assertion or secret", err)
				}
				if got := errorCode(err); got != tt.wantCode {
					t.Errorf("error code: got %q, want %q", got, tt.wantCode)
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.idpForms) != tt.wantIdP || len(f.asForms) != tt.wantAS {
				t.Fatalf("requests: got %d exchanges and %d grants, want %d and %d", len(f.idpForms), len(f.asForms), tt.wantIdP, tt.wantAS)
			}
			if tt.wantIdP > 0 {
				want := map[string]string{
					"grant_type": grantTypeTokenExchange, "requested_token_type": tokenTypeIDJAG,
					"subject_token": "the-id-token", "subject_token_type": tokenTypeIDToken,
					"audience": f.srv.URL, "resource": "https://mcp.example.com/mcp", "scope": "mcp:read",
				}
				checkForm(t, "token exchange", f.idpForms[0], want)
				if f.idpBasic[0] != "Basic aWRwLWNsaWVudDppZHAtc2VjcmV0" {
					t.Errorf("token exchange authorization: got %q", f.idpBasic[0])
				}
			}
			if tt.wantAS > 0 {
				checkForm(t, "JWT bearer grant", f.asForms[0], map[string]string{
					"grant_type": grantTypeJWTBearer, "assertion": "jag-1", "resource": "https://mcp.example.com/mcp",
					"scope": "mcp:read", "client_secret": "",
				})
				if f.asBasic[0] != "Basic bWNwLWNsaWVudDpzM2NyZXQ=" {
					t.Errorf("grant authorization: got %q", f.asBasic[0])
				}
			}
			if tt.wantToken == "" {
				return
			}
			f.mu.Unlock()
			tok, err := ts.Token()
			f.mu.Lock()
			if err != nil || tok.AccessToken != tt.wantToken {
				t.Fatalf("Token: got %v, %v; want %s", tok, err, tt.wantToken)
			}
		})
	}
}

// TestIDJAGSingleUse checks that every authorization gets a new ID-JAG,
// and that the token exchange carries no client authentication when none
// is configured.
func TestIDJAGSingleUse(t *testing.T) {
	f := newFakeJWTBearer(t)
	a, err := NewIDJAG(IDJAGConfig{
		Client: ClientCredentialsConfig{ClientID: "mcp-client", ClientSecret: "s", AnyIssuer: true,
			DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})},
		IdPTokenURL:       f.srv.URL + "/idp/token",
		IdentityAssertion: func(context.Context) (string, error) { return "id", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a new Authorize (a 401 or a step-up) is a new exchange
		if _, err := a.Authorize(context.Background(), f.request()); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	got := []string{f.asForms[0].Get("assertion"), f.asForms[1].Get("assertion")}
	if got[0] != "jag-1" || got[1] != "jag-2" {
		t.Errorf("assertions: got %v, want [jag-1 jag-2]", got)
	}
	if f.idpForms[0].Get("client_id") != "" || f.idpBasic[0] != "" {
		t.Errorf("token exchange without IdP client: got client_id %q, Authorization %q", f.idpForms[0].Get("client_id"), f.idpBasic[0])
	}
}

func TestNewIDJAGConfig(t *testing.T) {
	ok := func(context.Context) (string, error) { return "id", nil }
	cc := ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", AnyIssuer: true}
	tests := []struct {
		name string
		cfg  IDJAGConfig
	}{
		{"no client", IDJAGConfig{IdPTokenURL: "https://idp.example/token", IdentityAssertion: ok}},
		{"no token URL", IDJAGConfig{Client: cc, IdentityAssertion: ok}},
		{"http token URL", IDJAGConfig{Client: cc, IdPTokenURL: "http://idp.example/token", IdentityAssertion: ok}},
		{"no assertion", IDJAGConfig{Client: cc, IdPTokenURL: "https://idp.example/token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewIDJAG(tt.cfg); !errors.Is(err, errInvalidConfig) {
				t.Errorf("got %v, want %v", err, errInvalidConfig)
			}
		})
	}
}

func TestWorkloadIdentity(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	now := time.Unix(1_800_000_000, 0)
	mint := func(sub string, exp time.Time) string {
		s, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: "https://workload.example", Subject: sub, Expiry: jwt.NewNumericDate(exp)}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid, expired := mint("w1", now.Add(time.Hour)), mint("w1", now)
	loopback := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	tests := []struct {
		name     string
		jwt      string
		asStatus int
		asError  string
		wantErr  error
		wantCode string
		wantAS   int
	}{
		{name: "grant", jwt: valid, wantAS: 1},
		{name: "expired JWT not sent", jwt: expired, wantErr: errAssertionExpired},
		{name: "not a JWT", jwt: "not-a-jwt", wantErr: errAuthorize},
		{name: "empty", jwt: " \n", wantErr: errAuthorize},
		{name: "too large", jwt: strings.Repeat("a", maxAssertionBytes+1), wantErr: errAuthorize},
		{name: "invalid_grant not retried", jwt: valid, asStatus: 400, asError: "invalid_grant", wantErr: errAuthorize, wantCode: "invalid_grant", wantAS: 1},
		{name: "invalid_scope", jwt: valid, asStatus: 400, asError: "invalid_scope", wantErr: errAuthorize, wantCode: "invalid_scope", wantAS: 1},
		{name: "unauthorized_client", jwt: valid, asStatus: 400, asError: "unauthorized_client", wantErr: errAuthorize, wantCode: "unauthorized_client", wantAS: 1},
	}
	for _, tt := range tests {
		for _, fromFile := range []bool{false, true} {
			name := tt.name + map[bool]string{false: " (callback)", true: " (file)"}[fromFile]
			t.Run(name, func(t *testing.T) {
				f := newFakeJWTBearer(t)
				f.asStatus, f.asError = tt.asStatus, tt.asError
				cfg := WorkloadIdentityConfig{Issuer: f.srv.URL, DiscoveryHTTPClient: loopback, Now: func() time.Time { return now }}
				if fromFile {
					cfg.TokenFile = filepath.Join(t.TempDir(), "token")
					if err := os.WriteFile(cfg.TokenFile, []byte(tt.jwt+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				} else {
					cfg.Token = func(context.Context) (string, error) { return tt.jwt, nil }
				}
				w, err := NewWorkloadIdentity(cfg)
				if err != nil {
					t.Fatal(err)
				}
				_, err = w.Authorize(context.Background(), f.request())
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Authorize: got %v, want %v", err, tt.wantErr)
				}
				if err != nil && strings.Contains(err.Error(), tt.jwt[:min(len(tt.jwt), 20)]) && strings.TrimSpace(tt.jwt) != "" {
					t.Errorf("error text %q shows the JWT", err)
				}
				if got := errorCode(err); got != tt.wantCode {
					t.Errorf("error code: got %q, want %q", got, tt.wantCode)
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.asForms) != tt.wantAS {
					t.Fatalf("grant requests: got %d, want %d", len(f.asForms), tt.wantAS)
				}
				if tt.wantAS > 0 {
					checkForm(t, "JWT bearer grant", f.asForms[0], map[string]string{
						"grant_type": grantTypeJWTBearer, "assertion": tt.jwt, "resource": "https://mcp.example.com/mcp",
						"scope": "mcp:read", "client_id": "", "client_secret": "", "client_assertion": "",
					})
					if f.asBasic[0] != "" {
						t.Errorf("Authorization: got %q, want none", f.asBasic[0])
					}
				}
			})
		}
	}
}

// TestWorkloadIdentityRotation checks that the token file is read again
// for every new access token, so a rotated JWT is the one presented.
func TestWorkloadIdentityRotation(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	now := time.Unix(1_800_000_000, 0)
	f := newFakeJWTBearer(t)
	file := filepath.Join(t.TempDir(), "token")
	write := func(sub string) string {
		s, _ := jwt.Signed(signer).Claims(jwt.Claims{Subject: sub, Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := write("a")
	w, err := NewWorkloadIdentity(WorkloadIdentityConfig{TokenFile: file, ClientID: "wl", AnyIssuer: true,
		DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true}), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Authorize(context.Background(), f.request()); err != nil {
		t.Fatal(err)
	}
	second := write("b")
	if _, err := w.Authorize(context.Background(), f.request()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asForms[0].Get("assertion") != first || f.asForms[1].Get("assertion") != second {
		t.Error("the rotated token file was not read again")
	}
	if f.asForms[0].Get("client_id") != "wl" {
		t.Errorf("client_id: got %q, want wl", f.asForms[0].Get("client_id"))
	}
}

func TestNewWorkloadIdentityConfig(t *testing.T) {
	tok := func(context.Context) (string, error) { return "", nil }
	tests := []struct {
		name string
		cfg  WorkloadIdentityConfig
	}{
		{"no token", WorkloadIdentityConfig{AnyIssuer: true}},
		{"file and callback", WorkloadIdentityConfig{TokenFile: "f", Token: tok, AnyIssuer: true}},
		{"no issuer", WorkloadIdentityConfig{Token: tok}},
		{"issuer and any issuer", WorkloadIdentityConfig{Token: tok, Issuer: "https://as.example", AnyIssuer: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewWorkloadIdentity(tt.cfg); !errors.Is(err, errInvalidConfig) {
				t.Errorf("got %v, want %v", err, errInvalidConfig)
			}
		})
	}
}

// errorCode is the RFC 6749 §5.2 error code a failure carries: an
// *Error's Code or an *oauth2.RetrieveError's ErrorCode.
func errorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	// The token exchange's *Error is wrapped beside the "authorize" one.
	var code string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *Error:
			if e.Code != "" {
				code = e.Code
			}
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return code
}

// checkForm compares the named members of form ("" means absent).
func checkForm(t *testing.T, what string, form url.Values, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("%s %s: got %q, want %q", what, k, got, v)
		}
	}
}
