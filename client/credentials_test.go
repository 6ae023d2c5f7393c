package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// fakeAS is a loopback authorization server with a client credentials
// token endpoint; it records the form and Authorization header of every
// token request.
type fakeAS struct {
	srv     *httptest.Server
	methods []string // token_endpoint_auth_methods_supported
	algs    []string // token_endpoint_auth_signing_alg_values_supported

	mu    sync.Mutex
	forms []url.Values
	basic []string
}

func newFakeAS(t *testing.T, methods, algs []string) *fakeAS {
	t.Helper()
	a := &fakeAS{methods: methods, algs: algs}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"issuer": a.srv.URL, "token_endpoint": a.srv.URL + "/token", "response_types_supported": []string{"code"},
				"grant_types_supported":                            []string{"client_credentials"},
				"token_endpoint_auth_methods_supported":            a.methods,
				"token_endpoint_auth_signing_alg_values_supported": a.algs,
			})
		case "/token":
			_ = r.ParseForm()
			a.mu.Lock()
			a.forms = append(a.forms, r.PostForm)
			a.basic = append(a.basic, r.Header.Get("Authorization"))
			a.mu.Unlock()
			_, _ = w.Write([]byte(`{"access_token":"cc-token","token_type":"Bearer","expires_in":3600,"scope":"` + r.PostForm.Get("scope") + `"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func TestClientCredentials(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	loopback := asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})
	tests := []struct {
		name      string
		cfg       ClientCredentialsConfig // Issuer "{as}" is replaced
		methods   []string
		algs      []string
		otherAS   bool // the metadata names another server
		wantErr   error
		wantBasic string // the Authorization header of the token request
		wantForm  map[string]string
		assertion bool
	}{
		{
			name: "client_secret_basic", cfg: ClientCredentialsConfig{ClientID: "c1", ClientSecret: "s3cret", Issuer: "{as}"},
			methods: []string{"client_secret_basic"}, wantBasic: "Basic YzE6czNjcmV0",
			wantForm: map[string]string{"grant_type": "client_credentials", "scope": "mcp:read", "resource": "https://mcp.example.com/mcp", "client_secret": ""},
		},
		{
			name: "client_secret_post", cfg: ClientCredentialsConfig{ClientID: "c1", ClientSecret: "s3cret", AnyIssuer: true},
			methods:  []string{"private_key_jwt", "client_secret_post"},
			wantForm: map[string]string{"grant_type": "client_credentials", "client_id": "c1", "client_secret": "s3cret"},
		},
		{
			name: "private_key_jwt", cfg: ClientCredentialsConfig{ClientID: "c1", PrivateKey: ecKey, KeyID: "k1", Issuer: "{as}"},
			methods: []string{"private_key_jwt"}, algs: []string{"ES256"}, assertion: true,
			wantForm: map[string]string{"client_id": "c1", "client_assertion_type": clientAssertionType, "client_secret": ""},
		},
		{
			name: "issuer not named by the resource", cfg: ClientCredentialsConfig{ClientID: "c1", ClientSecret: "s", Issuer: "{as}"},
			methods: []string{"client_secret_basic"}, otherAS: true, wantErr: errAuthorize,
		},
		{
			name: "method not supported", cfg: ClientCredentialsConfig{ClientID: "c1", ClientSecret: "s", AuthMethod: authClientSecretPost, Issuer: "{as}"},
			methods: []string{"client_secret_basic"}, wantErr: errAuthorize,
		},
		{
			name: "algorithm not accepted", cfg: ClientCredentialsConfig{ClientID: "c1", PrivateKey: ecKey, Issuer: "{as}"},
			methods: []string{"private_key_jwt"}, algs: []string{"RS256"}, wantErr: errAuthorize,
		},
		{
			name: "no secret method", cfg: ClientCredentialsConfig{ClientID: "c1", ClientSecret: "s", Issuer: "{as}"},
			methods: []string{"private_key_jwt"}, wantErr: errAuthorize,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newFakeAS(t, tt.methods, tt.algs)
			cfg := tt.cfg
			if cfg.Issuer == "{as}" {
				cfg.Issuer = as.srv.URL
			}
			cfg.DiscoveryHTTPClient, cfg.Now = loopback, func() time.Time { return now }
			cc, err := NewClientCredentials(cfg)
			if err != nil {
				t.Fatal(err)
			}
			servers := []string{as.srv.URL}
			if tt.otherAS {
				servers = []string{"https://as.example.com"}
			}
			ts, err := cc.Authorize(context.Background(), AuthorizeRequest{
				Resource:         "https://mcp.example.com/mcp",
				ResourceMetadata: &prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: servers},
				Scopes:           []string{"mcp:read"},
			})
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Authorize() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if len(as.forms) != 0 {
					t.Errorf("%d token requests, want none", len(as.forms))
				}
				return
			}
			tok, err := ts.Token()
			if err != nil || tok.AccessToken != "cc-token" {
				t.Fatalf("Token() = %v, %v", tok, err)
			}
			if len(as.forms) != 1 {
				t.Fatalf("%d token requests, want 1", len(as.forms))
			}
			form := as.forms[0]
			if as.basic[0] != tt.wantBasic {
				t.Errorf("Authorization = %q, want %q", as.basic[0], tt.wantBasic)
			}
			for k, v := range tt.wantForm {
				if form.Get(k) != v {
					t.Errorf("form %s = %q, want %q", k, form.Get(k), v)
				}
			}
			if !tt.assertion {
				if form.Has("client_assertion") {
					t.Error("client_assertion sent without private_key_jwt")
				}
				return
			}
			parsed, err := jwt.ParseSigned(form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
			if err != nil {
				t.Fatal(err)
			}
			if kid := parsed.Headers[0].KeyID; kid != "k1" {
				t.Errorf("kid = %q, want k1", kid)
			}
			var claims jwt.Claims
			if err := parsed.Claims(&ecKey.PublicKey, &claims); err != nil {
				t.Fatal(err)
			}
			if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: "c1", Subject: "c1", AnyAudience: jwt.Audience{as.srv.URL}, Time: now}, 0); err != nil {
				t.Errorf("assertion claims: %v", err)
			}
			if claims.ID == "" || claims.Expiry.Time().Sub(now) != assertionLifetime {
				t.Errorf("assertion jti %q, exp %v, want a jti and exp now+%v", claims.ID, claims.Expiry.Time(), assertionLifetime)
			}
		})
	}
}

// TestClientCredentialsRefused: a refused token request is errAuthorize
// and the *oauth2.RetrieveError, and its text does not repeat the
// server's answer.
func TestClientCredentialsRefused(t *testing.T) {
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/token" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"<script>evil</script>"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token", "response_types_supported": []string{"token"}})
	}))
	t.Cleanup(as.Close)
	cc, err := NewClientCredentials(ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", Issuer: as.URL,
		DiscoveryHTTPClient: asmeta.NewGuardedClient(asmeta.GuardConfig{InsecureAllowLoopback: true})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cc.Authorize(context.Background(), AuthorizeRequest{ResourceMetadata: &prm.Metadata{AuthorizationServers: []string{as.URL}}})
	var re *oauth2.RetrieveError
	if !errors.Is(err, errAuthorize) || !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Fatalf("Authorize() error = %v, want errAuthorize wrapping the RetrieveError", err)
	}
	if want := "client: authorization failed: client: token request failed: status 401"; err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
}

func TestNewClientCredentials(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	tests := []struct {
		name    string
		cfg     ClientCredentialsConfig
		wantErr bool
	}{
		{"secret", ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", Issuer: "https://as"}, false},
		{"ec key", ClientCredentialsConfig{ClientID: "c", PrivateKey: ecKey, AnyIssuer: true}, false},
		{"rsa PS256", ClientCredentialsConfig{ClientID: "c", PrivateKey: rsaKey, SigningAlgorithm: "PS256", AnyIssuer: true}, false},
		{"no client id", ClientCredentialsConfig{ClientSecret: "s", AnyIssuer: true}, true},
		{"no credential", ClientCredentialsConfig{ClientID: "c", AnyIssuer: true}, true},
		{"both credentials", ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", PrivateKey: ecKey, AnyIssuer: true}, true},
		{"no issuer", ClientCredentialsConfig{ClientID: "c", ClientSecret: "s"}, true},
		{"issuer and any", ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", Issuer: "https://as", AnyIssuer: true}, true},
		{"jwt method with secret", ClientCredentialsConfig{ClientID: "c", ClientSecret: "s", AuthMethod: authPrivateKeyJWT, AnyIssuer: true}, true},
		{"secret method with key", ClientCredentialsConfig{ClientID: "c", PrivateKey: ecKey, AuthMethod: authClientSecretBasic, AnyIssuer: true}, true},
		{"algorithm not fitting", ClientCredentialsConfig{ClientID: "c", PrivateKey: ecKey, SigningAlgorithm: "RS256", AnyIssuer: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClientCredentials(tt.cfg)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, errInvalidConfig)) {
				t.Fatalf("NewClientCredentials() error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Error("error text contains the secret")
			}
		})
	}
}
