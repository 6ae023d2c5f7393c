package cimd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

type dcrFixture struct {
	h     *DCRHandler
	store *memoryStore
	clk   *clock
}

func newDCR(t *testing.T, mod func(*DCRConfig)) *dcrFixture {
	t.Helper()
	f := &dcrFixture{store: newMemoryStore(), clk: newClock()}
	cfg := DCRConfig{Store: f.store, Now: f.clk.Now, IPRate: rate.Inf, GlobalRate: rate.Inf, NetworkClients: 1 << 16}
	if mod != nil {
		mod(&cfg)
	}
	h, err := NewDCRHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// post sends body to the handler from remote, with content type ct.
func (f *dcrFixture) post(body, ct, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "https://as.example/register", strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if remote != "" {
		req.RemoteAddr = remote
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

type dcrReply struct {
	ClientID              string   `json:"client_id"`
	ClientIDIssuedAt      *int64   `json:"client_id_issued_at"`
	ClientSecret          string   `json:"client_secret"`
	ClientSecretExpiresAt *int64   `json:"client_secret_expires_at"`
	RedirectURIs          []string `json:"redirect_uris"`
	TokenEndpointAuth     string   `json:"token_endpoint_auth_method"`
	ApplicationType       string   `json:"application_type"`
	Error                 string   `json:"error"`
	ErrorDescription      string   `json:"error_description"`
}

func decodeReply(t *testing.T, rec *httptest.ResponseRecorder) dcrReply {
	t.Helper()
	var r dcrReply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if rec.Header().Get("Deprecation") != "@1785196800" || rec.Header().Get("Cache-Control") != "no-store" ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", rec.Header())
	}
	return r
}

func TestDeprecationDate(t *testing.T) {
	want := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC).Unix()
	if deprecationHeader != "@"+strconv.FormatInt(want, 10) {
		t.Errorf("deprecationHeader = %q, want @%d", deprecationHeader, want)
	}
}

func TestDCRRegisterPublicClient(t *testing.T) {
	f := newDCR(t, nil)
	rec := f.post(readTestdata(t, "dcr-native.json"), "application/json; charset=utf-8", "")
	if rec.Code != http.StatusCreated {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	r := decodeReply(t, rec)
	if !strings.HasPrefix(r.ClientID, clientIDPrefix) || len(r.ClientID) < len(clientIDPrefix)+22 || isClientIDURL(r.ClientID) {
		t.Errorf("client_id = %q", r.ClientID)
	}
	if r.ClientSecret != "" || r.ClientSecretExpiresAt != nil {
		t.Errorf("public client got a secret: %+v", r)
	}
	if r.ClientIDIssuedAt == nil || *r.ClientIDIssuedAt != t0.Unix() || r.TokenEndpointAuth != "none" || len(r.RedirectURIs) != 2 {
		t.Errorf("reply = %+v", r)
	}
	c, err := f.store.Get(context.Background(), r.ClientID)
	wantErrs(t, err)
	if c.Source != sourceDCR || len(c.SecretSHA256) > 0 || !c.RedirectURIAllowed("http://127.0.0.1:5555/callback") {
		t.Errorf("stored %+v", c)
	}
}

func TestDCRRegisterConfidentialClient(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) { c.SecretLifetime = time.Hour })
	// The RFC 7591 §3.1 example without its jwks_uri, which this package
	// accepts only with private_key_jwt (see TestDCRRejects).
	body := strings.Replace(readTestdata(t, "dcr-rfc7591.json"), `"jwks_uri": "https://client.example.org/my_public_keys.jwks",`, "", 1)
	rec := f.post(body, "application/json", "")
	if rec.Code != http.StatusCreated {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	r := decodeReply(t, rec)
	if len(r.ClientSecret) < 43 || r.ClientSecretExpiresAt == nil || *r.ClientSecretExpiresAt != t0.Add(time.Hour).Unix() {
		t.Fatalf("reply = %+v", r)
	}
	reg, err := NewRegistry(RegistryConfig{Store: f.store, Now: f.clk.Now})
	wantErrs(t, err)
	ctx := context.Background()
	wantErrs(t, reg.VerifySecret(ctx, r.ClientID, r.ClientSecret))
	wantErrs(t, reg.VerifySecret(ctx, r.ClientID, r.ClientSecret+"x"), errInvalidSecret)
	wantErrs(t, reg.VerifySecret(ctx, r.ClientID, ""), errInvalidSecret)
	wantErrs(t, reg.VerifySecret(ctx, "dcr_nope", r.ClientSecret), ErrUnknownClient)
	f.clk.Advance(time.Hour)
	wantErrs(t, reg.VerifySecret(ctx, r.ClientID, r.ClientSecret), errSecretExpired)

	stored, _ := json.Marshal(f.store.m[r.ClientID])
	if strings.Contains(string(stored), r.ClientSecret) {
		t.Errorf("the store holds the plaintext secret")
	}
}

func TestDCRDefaultAuthMethodIssuesSecret(t *testing.T) {
	f := newDCR(t, nil)
	r := decodeReply(t, f.post(`{"redirect_uris":["https://app.example/cb"]}`, "application/json", ""))
	if r.TokenEndpointAuth != authMethodClientSecretBasic || r.ClientSecret == "" || r.ClientSecretExpiresAt == nil || *r.ClientSecretExpiresAt != 0 {
		t.Errorf("reply = %+v", r)
	}
}

func TestDCRIssuedIDsAreUnique(t *testing.T) {
	f := newDCR(t, nil)
	seen := map[string]bool{}
	for range 200 {
		r := decodeReply(t, f.post(`{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`, "application/json", ""))
		if seen[r.ClientID] || strings.HasPrefix(r.ClientID, "https://") {
			t.Fatalf("bad or repeated client_id %q", r.ClientID)
		}
		seen[r.ClientID] = true
	}
}

func TestDCRRejects(t *testing.T) {
	huge := `{"redirect_uris":["https://app.example/cb"],"x":"` + strings.Repeat("x", 20<<10) + `"}`
	// 20 redirect URIs of 2000 bytes: valid, but over maxRecordBytes once
	// stored, which only a raised MaxBodyBytes lets through.
	var uris []string
	for i := range maxRedirectURIs {
		uris = append(uris, fmt.Sprintf("https://app.example/%02d/%s", i, strings.Repeat("p", 1980)))
	}
	bigRedirects := `{"token_endpoint_auth_method":"none","redirect_uris":["` + strings.Join(uris, `","`) + `"]}`
	tests := []struct {
		name, method, ct, body string
		mod                    func(*DCRConfig)
		wantStatus             int
		wantError              string
	}{
		{"get", http.MethodGet, "application/json", "", nil, 405, "invalid_request"},
		{"put", http.MethodPut, "application/json", "{}", nil, 405, "invalid_request"},
		{"no content type", "", "", `{}`, nil, 415, "invalid_client_metadata"},
		{"text/plain", "", "text/plain", `{}`, nil, 415, "invalid_client_metadata"},
		{"form", "", "application/x-www-form-urlencoded", `redirect_uris=x`, nil, 415, "invalid_client_metadata"},
		{"json suffix", "", "application/merge-patch+json", `{}`, nil, 415, "invalid_client_metadata"},
		{"huge body", "", "application/json", huge, nil, 413, "invalid_client_metadata"},
		{"small cap", "", "application/json", `{"redirect_uris":["https://app.example/cb"]}`, func(c *DCRConfig) { c.MaxBodyBytes = 10 }, 413, "invalid_client_metadata"},
		{"not json", "", "application/json", `redirect_uris=x`, nil, 400, "invalid_client_metadata"},
		{"array", "", "application/json", `[]`, nil, 400, "invalid_client_metadata"},
		{"duplicate member", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, nil, 400, "invalid_client_metadata"},
		{"ill-typed", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"client_name":1}`, nil, 400, "invalid_client_metadata"},
		{"no redirect uris", "", "application/json", `{"client_name":"x"}`, nil, 400, "invalid_redirect_uri"},
		{"javascript", "", "application/json", `{"redirect_uris":["javascript:alert(1)"]}`, nil, 400, "invalid_redirect_uri"},
		{"data", "", "application/json", `{"redirect_uris":["data:text/html,x"]}`, nil, 400, "invalid_redirect_uri"},
		{"file", "", "application/json", `{"redirect_uris":["file:///etc/passwd"]}`, nil, 400, "invalid_redirect_uri"},
		{"http remote", "", "application/json", `{"redirect_uris":["http://app.example/cb"]}`, nil, 400, "invalid_redirect_uri"},
		{"fragment", "", "application/json", `{"redirect_uris":["https://app.example/cb#x"]}`, nil, 400, "invalid_redirect_uri"},
		{"wildcard", "", "application/json", `{"redirect_uris":["https://*.example/cb"]}`, nil, 400, "invalid_redirect_uri"},
		{"custom scheme off", "", "application/json", `{"application_type":"native","redirect_uris":["com.example.app:/cb"]}`, nil, 400, "invalid_redirect_uri"},
		{"web loopback (default type)", "", "application/json", `{"redirect_uris":["http://127.0.0.1:3000/cb"]}`, nil, 400, "invalid_redirect_uri"},
		{"native https", "", "application/json", `{"application_type":"native","redirect_uris":["https://app.example/cb"]}`, nil, 400, "invalid_redirect_uri"},
		{"unknown application_type", "", "application/json", `{"application_type":"tv","redirect_uris":["https://app.example/cb"]}`, nil, 400, "invalid_client_metadata"},
		{"implicit", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"grant_types":["implicit"],"response_types":["token"]}`, nil, 400, "invalid_client_metadata"},
		{"inconsistent", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"grant_types":["authorization_code"],"response_types":[]}`, nil, 400, "invalid_client_metadata"},
		{"client_secret_jwt", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_jwt"}`, nil, 400, "invalid_client_metadata"},
		{"pkjwt without keys", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, nil, 400, "invalid_client_metadata"},
		{"jwks and jwks_uri", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://app.example/j","jwks":{"keys":[{}]}}`, nil, 400, "invalid_client_metadata"},
		{"method not enabled", "", "application/json", `{"redirect_uris":["https://app.example/cb"]}`, func(c *DCRConfig) { c.AuthMethods = []string{authMethodNone} }, 400, "invalid_client_metadata"},
		{"jwks with none", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none","jwks":{"keys":[{"kty":"EC"}]}}`, nil, 400, "invalid_client_metadata"},
		{"jwks_uri with none", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none","jwks_uri":"https://app.example/j"}`, nil, 400, "invalid_client_metadata"},
		{"jwks with default method", "", "application/json", `{"redirect_uris":["https://app.example/cb"],"jwks":{"keys":[{"kty":"EC"}]}}`, nil, 400, "invalid_client_metadata"},
		{"RFC 7591 §3.1 example (jwks_uri with client_secret_basic)", "", "application/json", readTestdata(t, "dcr-rfc7591.json"), nil, 400, "invalid_client_metadata"},
		{"record over maxRecordBytes", "", "application/json", bigRedirects, func(c *DCRConfig) { c.MaxBodyBytes = 4 * maxRecordBytes }, 400, "invalid_client_metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDCR(t, tt.mod)
			m := tt.method
			if m == "" {
				m = http.MethodPost
			}
			req := httptest.NewRequest(m, "https://as.example/register", strings.NewReader(tt.body))
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			r := decodeReply(t, rec)
			if rec.Code != tt.wantStatus || r.Error != tt.wantError || r.ClientID != "" {
				t.Errorf("got %d %q, want %d %q (body %s)", rec.Code, r.Error, tt.wantStatus, tt.wantError, rec.Body)
			}
			if tt.wantStatus == 405 && rec.Header().Get("Allow") != "POST" {
				t.Errorf("Allow = %q", rec.Header().Get("Allow"))
			}
			if strings.Contains(rec.Body.String(), "evil") || strings.Contains(rec.Body.String(), "javascript") {
				t.Errorf("error body echoes input: %s", rec.Body)
			}
			if len(f.store.m) != 0 {
				t.Errorf("store has %d clients after a refusal", len(f.store.m))
			}
		})
	}
}

func TestDCRApplicationTypes(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) { c.DefaultApplicationType = appTypeNative; c.AllowPrivateUseSchemes = true })
	for _, body := range []string{
		`{"redirect_uris":["http://127.0.0.1:3000/cb"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["http://localhost:6274/oauth/callback"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["com.example.app:/oauth2redirect"],"token_endpoint_auth_method":"none"}`,
		`{"application_type":"web","redirect_uris":["https://app.example/cb"]}`,
	} {
		if rec := f.post(body, "application/json", ""); rec.Code != http.StatusCreated {
			t.Errorf("%s: status %d %s", body, rec.Code, rec.Body)
		}
	}
}

func TestDCRRateLimit(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) { c.IPRate = rate.Every(time.Hour); c.IPBurst = 3 })
	body := `{"redirect_uris":["https://app.example/cb"]}`
	for i := range 3 {
		if rec := f.post(body, "application/json", "192.0.2.1:1234"); rec.Code != 201 {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	// X-Forwarded-For is not trusted by default: a spoofed header does not
	// buy a fresh bucket.
	req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	req.RemoteAddr = "192.0.2.1:999"
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	r := decodeReply(t, rec)
	if rec.Code != http.StatusTooManyRequests || r.Error != "temporarily_unavailable" {
		t.Fatalf("got %d %q, want 429", rec.Code, r.Error)
	}
	if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Errorf("Retry-After = %q", rec.Header().Get("Retry-After"))
	}
	if rec := f.post(body, "application/json", "192.0.2.2:1234"); rec.Code != 201 {
		t.Errorf("another IP: %d", rec.Code)
	}
	// IPv6 addresses share a bucket per /64.
	for i := range 3 {
		f.post(body, "application/json", "[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:1")
	}
	if rec := f.post(body, "application/json", "[2001:db8:1:2:ffff::9]:1"); rec.Code != 429 {
		t.Errorf("same /64: %d, want 429", rec.Code)
	}
	if rec := f.post(body, "application/json", "[2001:db8:1:3::1]:1"); rec.Code != 201 {
		t.Errorf("other /64: %d, want 201", rec.Code)
	}
}

func TestDCRRegistrationFlood(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) {
		c.IPRate, c.IPBurst = defaultIPRate, defaultIPBurst
		c.GlobalRate, c.GlobalBurst = defaultDCRGlobalRate, defaultDCRGlobalBurst
	})
	created, limited := 0, 0
	for i := range 1000 { // 1000 requests from 250 addresses, each in its own /24
		rec := f.post(`{"redirect_uris":["https://app.example/cb"]}`, "application/json", "10."+strconv.Itoa(i%250)+".0.1:1")
		switch rec.Code {
		case 201:
			created++
		case 429:
			limited++
		default:
			t.Fatalf("status %d", rec.Code)
		}
	}
	if created != defaultDCRGlobalBurst || limited != 1000-defaultDCRGlobalBurst || len(f.store.m) != created {
		t.Errorf("created/limited/stored = %d/%d/%d", created, limited, len(f.store.m))
	}
}

func TestDCRClientIPHook(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) {
		c.IPRate, c.IPBurst = rate.Every(time.Hour), 1
		c.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Real-Client") }
	})
	send := func(ip string) int {
		req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(`{"redirect_uris":["https://app.example/cb"]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Real-Client", ip)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec.Code
	}
	if a, b, c := send("192.0.2.1"), send("192.0.2.2"), send("192.0.2.1"); a != 201 || b != 201 || c != 429 {
		t.Errorf("statuses %d %d %d, want 201 201 429", a, b, c)
	}
}

type failingStore struct{ Store }

func (failingStore) Put(context.Context, *Client) error { return errors.New("disk full") }

func TestDCRStoreFailure(t *testing.T) {
	h, err := NewDCRHandler(DCRConfig{Store: failingStore{}})
	wantErrs(t, err)
	req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(`{"redirect_uris":["https://app.example/cb"]}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 500 || strings.Contains(string(body), "disk") {
		t.Errorf("got %d %s", rec.Code, body)
	}
}

func TestNewDCRHandlerConfigErrors(t *testing.T) {
	s := newMemoryStore()
	for _, cfg := range []DCRConfig{
		{},
		{Store: s, AuthMethods: []string{"client_secret_jwt"}},
		{Store: s, DefaultApplicationType: "tv"},
		{Store: s, MaxBodyBytes: -1},
		{Store: s, IPBurst: -1},
	} {
		if _, err := NewDCRHandler(cfg); !errors.Is(err, errConfig) {
			t.Errorf("NewDCRHandler(%+v) = %v, want errConfig", cfg, err)
		}
	}
}
