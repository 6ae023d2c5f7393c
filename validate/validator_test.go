package validate

import (
	"context"
	"errors"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

func TestNewConfig(t *testing.T) {
	k := keys(t)
	src := k.primarySet()
	ok := Config{Issuers: []Issuer{{Issuer: testIss, Keys: src}}, Audiences: []string{testAud}}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr error
	}{
		{"minimal", func(*Config) {}, nil},
		{"no issuers", func(c *Config) { c.Issuers = nil }, ErrConfig},
		{"empty issuer", func(c *Config) { c.Issuers = []Issuer{{Keys: src}} }, ErrConfig},
		{"nil key source", func(c *Config) { c.Issuers = []Issuer{{Issuer: testIss}} }, ErrConfig},
		{"typed nil key source", func(c *Config) { c.Issuers = []Issuer{{Issuer: testIss, Keys: (*StaticKeys)(nil)}} }, ErrConfig},
		{"duplicate issuer", func(c *Config) { c.Issuers = append(c.Issuers, Issuer{Issuer: testIss, Keys: src}) }, ErrConfig},
		{"two issuers", func(c *Config) { c.Issuers = append(c.Issuers, Issuer{Issuer: testIss2, Keys: src}) }, nil},
		{"no audiences", func(c *Config) { c.Audiences = nil }, ErrConfig},
		{"empty audience", func(c *Config) { c.Audiences = []string{testAud, ""} }, ErrConfig},
		{"empty non-nil clients", func(c *Config) { c.AllowedClients = []string{} }, ErrConfig},
		{"empty client", func(c *Config) { c.AllowedClients = []string{""} }, ErrConfig},
		{"empty non-nil algorithms", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{} }, ErrConfig},
		{"HS256", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{jose.ES256, jose.HS256} }, ErrConfig},
		{"HS512", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{jose.HS512} }, ErrConfig},
		{"none", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{"none"} }, ErrConfig},
		{"unknown alg", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{"ES256K"} }, ErrConfig},
		{"one alg", func(c *Config) { c.Algorithms = []jose.SignatureAlgorithm{jose.EdDSA} }, nil},
		{"negative MaxTokenBytes", func(c *Config) { c.MaxTokenBytes = -1 }, ErrConfig},
		{"negative MaxTokenLifetime", func(c *Config) { c.MaxTokenLifetime = -time.Second }, ErrConfig},
		{"negative leeway is fine", func(c *Config) { c.Leeway = -1 }, nil},
		{"negative cache is fine", func(c *Config) { c.CacheSize = -1 }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			cfg.Issuers = slices.Clone(ok.Issuers)
			tt.mutate(&cfg)
			v, err := New(cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New: got err %v, want %v", err, tt.wantErr)
			}
			if (v == nil) != (err != nil) {
				t.Fatalf("New: got validator %v with err %v", v, err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Leeway != defaultLeeway || c.MaxTokenBytes != defaultMaxTokenBytes || c.CacheSize != defaultCacheSize {
		t.Errorf("defaults: got leeway %v, max %d, cache %d", c.Leeway, c.MaxTokenBytes, c.CacheSize)
	}
	if !slices.Equal(c.Algorithms, defaultAlgorithms()) || c.Now == nil {
		t.Errorf("defaults: got algorithms %v, now %v", c.Algorithms, c.Now != nil)
	}
	if got := (Config{Leeway: -time.Second}).withDefaults().Leeway; got != 0 {
		t.Errorf("negative leeway: got %v, want 0", got)
	}
}

// TestNewCopiesConfig checks that New keeps no reference to caller slices.
func TestNewCopiesConfig(t *testing.T) {
	k := keys(t)
	cfg := Config{
		Issuers:        []Issuer{{Issuer: testIss, Keys: k.primarySet()}},
		Audiences:      []string{testAud},
		AllowedClients: []string{"client-1"},
		Algorithms:     []jose.SignatureAlgorithm{jose.ES256},
		Now:            func() time.Time { return testNow },
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Issuers[0].Issuer = "https://evil.example"
	cfg.Audiences[0] = "https://evil.example"
	cfg.AllowedClients[0] = "evil"
	cfg.Algorithms[0] = jose.HS256
	if _, err := v.Validate(context.Background(), mint(t, k.es256, baseClaims())); err != nil {
		t.Fatalf("Validate after caller mutated config: %v", err)
	}
}

// vcase is one Validate scenario. Each runs with the cache disabled and
// enabled; with the cache, Validate is called twice and both results must
// match, so the cached path is held to the same table.
type vcase struct {
	name    string
	cfg     func(*Config)
	tok     func(t testing.TB, k *testKeys) string
	wantErr error
	check   func(t *testing.T, c *Claims)
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	k := keys(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.tok(t, k)
			for _, cached := range []bool{false, true} {
				v := newTestValidator(t, func(c *Config) {
					if tc.cfg != nil {
						tc.cfg(c)
					}
					if cached {
						c.CacheSize = 16
					}
				})
				calls := 1
				if cached {
					calls = 2
				}
				for i := range calls {
					c, err := v.Validate(context.Background(), tok)
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("cache=%v call %d: got err %v, want %v", cached, i, err, tc.wantErr)
					}
					if err != nil {
						if c != nil || !wrapsOneSentinel(err) {
							t.Fatalf("cache=%v: got claims %v and err %v, want nil claims and one sentinel", cached, c, err)
						}
						continue
					}
					if tc.check != nil {
						tc.check(t, c)
					}
					// Differential, for every case of every hostile suite:
					// what Validate accepts, go-jose accepts with the same
					// claims (so what go-jose refuses, Validate refuses).
					for _, is := range v.cfg.Issuers {
						if set, ok := is.Keys.(*StaticKeys); ok && is.Issuer == c.Issuer {
							agreeWithGoJose(t, tok, set, c)
						}
					}
				}
			}
		})
	}
}

func es(c map[string]any) func(testing.TB, *testKeys) string {
	return func(t testing.TB, k *testKeys) string { return mint(t, k.es256, c) }
}

func at(d time.Duration) int64 { return testNow.Add(d).Unix() }

func TestValidateHappy(t *testing.T) {
	all := func(t *testing.T, c *Claims) {
		t.Helper()
		want := Claims{
			Issuer: testIss, Subject: "alice", ClientID: "client-1", ID: "jti-1",
			Audience: []string{testAud}, Scopes: []string{"tools:read", "tools:call"},
			Expiry: testNow.Add(time.Hour), IssuedAt: testNow.Add(-time.Minute), NotBefore: testNow.Add(-time.Minute),
		}
		if c.Issuer != want.Issuer || c.Subject != want.Subject || c.ClientID != want.ClientID || c.ID != want.ID ||
			!slices.Equal(c.Audience, want.Audience) || !slices.Equal(c.Scopes, want.Scopes) ||
			!c.Expiry.Equal(want.Expiry) || !c.IssuedAt.Equal(want.IssuedAt) || !c.NotBefore.Equal(want.NotBefore) {
			t.Errorf("claims: got %+v, want %+v", *c, want)
		}
	}
	var cases []vcase
	for _, name := range []string{"es256", "es384", "es512", "rs256", "ps256", "ed"} {
		cases = append(cases, vcase{
			name: "go-jose " + name,
			tok: func(t testing.TB, k *testKeys) string {
				m := map[string]*testKey{"es256": k.es256, "es384": k.es384, "es512": k.es512, "rs256": k.rs256, "ps256": k.ps256, "ed": k.ed}
				return mint(t, m[name], baseClaims())
			},
			check: all,
		})
	}
	for _, alg := range []jose.SignatureAlgorithm{jose.RS384, jose.RS512, jose.PS384, jose.PS512} {
		cases = append(cases, vcase{
			name: "forged " + string(alg),
			cfg: func(c *Config) {
				c.Issuers[0].Keys = &StaticKeys{Set: []jose.JSONWebKey{{Key: keys(t).rs256.priv.Public(), KeyID: "rsa"}}}
			},
			tok: func(t testing.TB, k *testKeys) string {
				return forge(t, k.rs256, `{"alg":"`+string(alg)+`","typ":"at+jwt","kid":"rsa"}`, claimsJSON(baseClaims()))
			},
			check: all,
		})
	}
	cases = append(cases,
		vcase{name: "kid header", tok: es(baseClaims()), check: func(t *testing.T, c *Claims) {
			if c.KeyID != "es256" {
				t.Errorf("KeyID: got %q, want es256", c.KeyID)
			}
		}},
		vcase{name: "fractional dates", tok: es(with("exp", 1767326645.5, "iat", 1767322000.25)), check: func(t *testing.T, c *Claims) {
			if want := time.Unix(1767326645, 5e8).UTC(); !c.Expiry.Equal(want) {
				t.Errorf("Expiry: got %v, want %v", c.Expiry, want)
			}
		}},
		vcase{name: "latest NumericDate", tok: es(with("exp", int64(jwtclaims.MaxNumericDate)))},
		vcase{name: "no nbf", tok: es(with("nbf", nil)), check: func(t *testing.T, c *Claims) {
			if !c.NotBefore.IsZero() {
				t.Errorf("NotBefore: got %v, want zero", c.NotBefore)
			}
		}},
		vcase{name: "no scope", tok: es(with("scope", nil)), check: func(t *testing.T, c *Claims) {
			if c.Scopes != nil || c.HasScope("tools:read") {
				t.Errorf("Scopes: got %q, want nil", c.Scopes)
			}
		}},
		vcase{name: "Decode extra claims", tok: es(with("roles", []string{"admin"})), check: func(t *testing.T, c *Claims) {
			var extra struct {
				Roles []string `json:"roles"`
				Sub   string   `json:"sub"`
			}
			if err := c.Decode(&extra); err != nil || !slices.Equal(extra.Roles, []string{"admin"}) || extra.Sub != "alice" {
				t.Errorf("Decode: got %+v, %v", extra, err)
			}
		}},
	)
	runCases(t, cases)
}

func TestValidateIssuers(t *testing.T) {
	twoIssuers := func(c *Config) {
		k := keys(t)
		c.Issuers = append(c.Issuers, Issuer{Issuer: testIss2, Keys: &StaticKeys{Set: []jose.JSONWebKey{k.es256b.jwk()}}})
	}
	runCases(t, []vcase{
		{name: "second issuer with its key", cfg: twoIssuers,
			tok: func(t testing.TB, k *testKeys) string { return mint(t, k.es256b, with("iss", testIss2)) },
			check: func(t *testing.T, c *Claims) {
				if c.Issuer != testIss2 {
					t.Errorf("Issuer: got %q, want %q", c.Issuer, testIss2)
				}
			}},
		{name: "issuer B key on iss=A token", cfg: twoIssuers,
			tok:     func(t testing.TB, k *testKeys) string { return mint(t, k.es256b, baseClaims()) },
			wantErr: errKeyNotFound},
		{name: "issuer A key on iss=B token", cfg: twoIssuers,
			tok:     func(t testing.TB, k *testKeys) string { return mint(t, k.es256, with("iss", testIss2)) },
			wantErr: errKeyNotFound},
		{name: "issuer B key under issuer A kid", cfg: twoIssuers,
			tok: func(t testing.TB, k *testKeys) string {
				return forge(t, k.es256b, `{"alg":"ES256","typ":"at+jwt","kid":"es256"}`, claimsJSON(baseClaims()))
			},
			wantErr: errSignature},
		{name: "unknown issuer", tok: es(with("iss", "https://evil.example")), wantErr: errIssuer},
		{name: "issuer differs by trailing slash", tok: es(with("iss", testIss+"/")), wantErr: errIssuer},
		{name: "issuer differs by case", tok: es(with("iss", "https://AS.example.com")), wantErr: errIssuer},
		{name: "missing iss", tok: es(with("iss", nil)), wantErr: errMissingClaim},
		{name: "empty iss", tok: es(with("iss", "")), wantErr: errMissingClaim},
		{name: "numeric iss", tok: es(with("iss", 7)), wantErr: errMalformed},
		{name: "array iss", tok: es(with("iss", []string{testIss})), wantErr: errMalformed},
	})
}

func TestValidateAudienceAndClient(t *testing.T) {
	multi := func(c *Config) { c.Audiences = []string{"https://other.example", testAud} }
	clients := func(c *Config) { c.AllowedClients = []string{"client-1", "client-2"} }
	runCases(t, []vcase{
		{name: "aud array any-of", tok: es(with("aud", []string{"x", testAud})), check: func(t *testing.T, c *Claims) {
			if !slices.Equal(c.Audience, []string{"x", testAud}) {
				t.Errorf("Audience: got %q", c.Audience)
			}
		}},
		{name: "second configured audience", cfg: multi, tok: es(baseClaims())},
		{name: "wrong aud", tok: es(with("aud", "https://other.example")), wantErr: errAudience},
		{name: "aud prefix is not a match", tok: es(with("aud", testAud+"/x")), wantErr: errAudience},
		// MCP Canonical Server URI: uppercase scheme and host SHOULD be
		// accepted; the path stays case-sensitive.
		{name: "aud uppercase scheme and host", tok: es(with("aud", upperAuthority(testAud)))},
		{name: "aud uppercase path", tok: es(with("aud", strings.ToUpper(testAud))), wantErr: errAudience},
		{name: "aud ASCII upper-case host letter", cfg: func(c *Config) { c.Audiences = []string{"https://mcp.kiwi.example/mcp"} },
			tok: es(with("aud", "https://mcp.Kiwi.example/mcp"))},
		// The Kelvin sign U+212A lower-cases to "k" under Unicode rules.
		{name: "aud Kelvin sign is not k", cfg: func(c *Config) { c.Audiences = []string{"https://mcp.kiwi.example/mcp"} },
			tok: es(with("aud", "https://mcp.\u212Aiwi.example/mcp")), wantErr: errAudience},
		{name: "aud with userinfo", tok: es(with("aud", strings.Replace(testAud, "://", "://u@", 1))), wantErr: errAudience},
		{name: "aud array without match", tok: es(with("aud", []string{"a", "b"})), wantErr: errAudience},
		{name: "missing aud", tok: es(with("aud", nil)), wantErr: errMissingClaim},
		{name: "empty aud array", tok: es(with("aud", []string{})), wantErr: errMissingClaim},
		{name: "empty aud string", tok: es(with("aud", "")), wantErr: errMissingClaim},
		{name: "numeric aud", tok: es(with("aud", 1)), wantErr: errMalformed},
		{name: "aud array with number", tok: es(with("aud", []any{testAud, 1})), wantErr: errMalformed},
		{name: "aud object", tok: es(with("aud", map[string]string{"a": testAud})), wantErr: errMalformed},
		{name: "RejectMultipleAudiences, two", cfg: func(c *Config) { c.RejectMultipleAudiences = true },
			tok: es(with("aud", []string{testAud, "x"})), wantErr: errAudience},
		{name: "RejectMultipleAudiences, one in array", cfg: func(c *Config) { c.RejectMultipleAudiences = true },
			tok: es(with("aud", []string{testAud}))},
		{name: "allowed client", cfg: clients, tok: es(baseClaims())},
		{name: "client not allowed", cfg: clients, tok: es(with("client_id", "client-3")), wantErr: errClient},
		{name: "azp used only without client_id", cfg: clients, tok: es(with("client_id", "client-3", "azp", "client-1")), wantErr: errClient},
		{name: "azp fallback", cfg: func(c *Config) { clients(c); c.AllowMissingClientID = true },
			tok: es(with("client_id", nil, "azp", "client-2")), check: func(t *testing.T, c *Claims) {
				if c.ClientID != "client-2" {
					t.Errorf("ClientID: got %q, want client-2", c.ClientID)
				}
			}},
		{name: "no client with allow-list", cfg: func(c *Config) { clients(c); c.AllowMissingClientID = true },
			tok: es(with("client_id", nil)), wantErr: errClient},
		{name: "numeric client_id", tok: es(with("client_id", 5)), wantErr: errMalformed},
		{name: "numeric azp", tok: es(with("azp", 5)), wantErr: errMalformed},
	})
}

func TestValidateRequiredClaims(t *testing.T) {
	all := func(c *Config) {
		c.AllowMissingJTI, c.AllowMissingClientID, c.AllowMissingIssuedAt, c.AllowMissingSubject = true, true, true, true
	}
	runCases(t, []vcase{
		{name: "missing exp", tok: es(with("exp", nil)), wantErr: errMissingClaim},
		{name: "missing exp, all relaxed", cfg: all, tok: es(with("exp", nil)), wantErr: errMissingClaim},
		{name: "missing aud, all relaxed", cfg: all, tok: es(with("aud", nil)), wantErr: errMissingClaim},
		{name: "missing iss, all relaxed", cfg: all, tok: es(with("iss", nil)), wantErr: errMissingClaim},
		{name: "missing sub", tok: es(with("sub", nil)), wantErr: errMissingClaim},
		{name: "empty sub", tok: es(with("sub", "")), wantErr: errMissingClaim},
		{name: "AllowMissingSubject", cfg: func(c *Config) { c.AllowMissingSubject = true }, tok: es(with("sub", nil))},
		{name: "missing jti", tok: es(with("jti", nil)), wantErr: errMissingClaim},
		{name: "AllowMissingJTI", cfg: func(c *Config) { c.AllowMissingJTI = true }, tok: es(with("jti", nil))},
		{name: "missing client_id", tok: es(with("client_id", nil, "azp", "client-1")), wantErr: errMissingClaim},
		{name: "AllowMissingClientID", cfg: func(c *Config) { c.AllowMissingClientID = true }, tok: es(with("client_id", nil))},
		{name: "missing iat", tok: es(with("iat", nil)), wantErr: errMissingClaim},
		{name: "AllowMissingIssuedAt", cfg: func(c *Config) { c.AllowMissingIssuedAt = true }, tok: es(with("iat", nil))},
		{name: "AllowMissingIssuedAt with MaxTokenLifetime", cfg: func(c *Config) { c.AllowMissingIssuedAt = true; c.MaxTokenLifetime = time.Hour },
			tok: es(with("iat", nil)), wantErr: errMissingClaim},
		{name: "numeric sub", tok: es(with("sub", 1)), wantErr: errMalformed},
		{name: "numeric jti", tok: es(with("jti", 1)), wantErr: errMalformed},
		{name: "null sub", tok: es(with("sub", jsonNull{})), wantErr: errMalformed},
	})
}

// jsonNull marshals as JSON null.
type jsonNull struct{}

func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// upperAuthority upper-cases the scheme and host of an absolute URI.
func upperAuthority(u string) string {
	i := strings.Index(u, "://") + 3
	j := strings.IndexByte(u[i:], '/')
	if j < 0 {
		return strings.ToUpper(u)
	}
	return strings.ToUpper(u[:i+j]) + u[i+j:]
}
