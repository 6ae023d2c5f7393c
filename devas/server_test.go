package devas_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/golden"
)

func TestMetadataGolden(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*devas.Config)
	}{
		{name: "metadata-default.golden"},
		{name: "metadata-dcr-refresh.golden", mod: func(c *devas.Config) { c.EnableDCR = true; c.RefreshTokens = true }},
		{name: "metadata-no-cimd.golden", mod: func(c *devas.Config) { c.DisableCIMD = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := devas.Config{
				Issuer:    "http://127.0.0.1:9000",
				Resources: []string{resource},
				Scopes:    []string{"tools:read", "tools:write"},
			}
			if tt.mod != nil {
				tt.mod(&cfg)
			}
			as, err := devas.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(as.Metadata(), "", "  ")
			golden.Check(t, tt.name, append(b, '\n'))
		})
	}
}

// TestDiscovery: the metadata is found at every well-known URL MCP clients
// try, for issuers with and without a path, and passes asmeta.Discover
// (RFC 8414 §3.3 issuer check) and Validate.
func TestDiscovery(t *testing.T) {
	for _, path := range []string{"", "/tenant1"} {
		t.Run("path="+path, func(t *testing.T) {
			e := start(t, func(c *devas.Config) { c.Issuer += path })
			iss := e.issuer + path
			urls, err := asmeta.WellKnownURLs(iss)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range urls {
				resp, body := e.get(u)
				var m asmeta.Metadata
				if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil || m.Issuer != iss {
					t.Errorf("%s: status %d issuer %q", u, resp.StatusCode, m.Issuer)
				}
			}
			m, err := asmeta.Discover(context.Background(), http.DefaultClient, iss)
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			if err := m.Validate(iss); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if m.AuthorizationEndpoint != iss+"/authorize" || m.TokenEndpoint != iss+"/token" || m.JWKSURI != iss+"/jwks" {
				t.Errorf("endpoints = %s %s %s", m.AuthorizationEndpoint, m.TokenEndpoint, m.JWKSURI)
			}
			resp, body := e.get(m.JWKSURI)
			var set jose.JSONWebKeySet
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &set) != nil || len(set.Keys) != 1 ||
				set.Keys[0].KeyID != e.as.PublicKeys()[0].KeyID || !set.Keys[0].IsPublic() {
				t.Errorf("jwks: status %d body %s", resp.StatusCode, body)
			}
			if resp, _ := e.get(e.issuer + path + "/nothing"); resp.StatusCode != http.StatusNotFound {
				t.Errorf("unknown path: %d", resp.StatusCode)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	reg, _ := cimd.NewRegistry(cimd.RegistryConfig{})
	tests := []struct {
		name string
		mod  func(*devas.Config)
	}{
		{name: "no issuer", mod: func(c *devas.Config) { c.Issuer = "" }},
		{name: "http on a public host", mod: func(c *devas.Config) { c.Issuer = "http://auth.example" }},
		{name: "trailing slash", mod: func(c *devas.Config) { c.Issuer = "http://127.0.0.1:9000/" }},
		{name: "query", mod: func(c *devas.Config) { c.Issuer = "https://auth.example?x=1" }},
		{name: "fragment", mod: func(c *devas.Config) { c.Issuer = "https://auth.example#f" }},
		{name: "no resources", mod: func(c *devas.Config) { c.Resources = nil }},
		{name: "relative resource", mod: func(c *devas.Config) { c.Resources = []string{"/mcp"} }},
		{name: "resource with fragment", mod: func(c *devas.Config) { c.Resources = []string{"https://mcp.example/#x"} }},
		{name: "bad scope", mod: func(c *devas.Config) { c.Scopes = []string{"a b"} }},
		{name: "offline_access without refresh", mod: func(c *devas.Config) { c.Scopes = []string{"offline_access"} }},
		{name: "bad subject", mod: func(c *devas.Config) { c.Subject = "a@b" }},
		{name: "negative ttl", mod: func(c *devas.Config) { c.TokenTTL = -time.Second }},
		{name: "unsupported alg", mod: func(c *devas.Config) { c.SigningAlgorithm = jose.HS256 }},
		{name: "key does not suit alg", mod: func(c *devas.Config) { c.Key = rsaKey }},
		{name: "wrong curve", mod: func(c *devas.Config) { c.Key = p384 }},
		{name: "registry with clients", mod: func(c *devas.Config) { c.Registry = reg; c.Clients = []cimd.Client{publicClient()} }},
		{name: "registry with dcr, no store", mod: func(c *devas.Config) { c.Registry = reg; c.EnableDCR = true }},
		{name: "bad resolver config", mod: func(c *devas.Config) { c.CIMD.Timeout = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := devas.Config{Issuer: "http://127.0.0.1:9000", Resources: []string{resource}}
			tt.mod(&cfg)
			if _, err := devas.New(cfg); !errors.Is(err, devas.ErrConfig) {
				t.Errorf("err = %v, want ErrConfig", err)
			}
		})
	}
}

// TestKeys: the configured key and kid are used; other algorithms work.
func TestKeys(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		alg jose.SignatureAlgorithm
		key *rsa.PrivateKey
		kid string
	}{
		{alg: jose.RS256, key: rsaKey, kid: "k1"},
		{alg: jose.EdDSA},
		{alg: jose.PS256},
	} {
		t.Run(string(tc.alg), func(t *testing.T) {
			cfg := devas.Config{Issuer: "http://127.0.0.1:9000", Resources: []string{resource}, SigningAlgorithm: tc.alg, KeyID: tc.kid}
			if tc.key != nil {
				cfg.Key = tc.key
			}
			as, err := devas.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			pub := as.PublicKeys()[0]
			if pub.Algorithm != string(tc.alg) || (tc.kid != "" && pub.KeyID != tc.kid) || pub.KeyID == "" || !pub.IsPublic() {
				t.Errorf("public key: alg %s kid %q public %v", pub.Algorithm, pub.KeyID, pub.IsPublic())
			}
			tok, err := as.IssueToken("u", "t", "c", resource, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, h := decodeWith(t, as.PublicKeys(), tok); h.Algorithm != string(tc.alg) {
				t.Errorf("alg = %s", h.Algorithm)
			}
		})
	}
}

func TestIssueToken(t *testing.T) {
	e := start(t, nil)
	tests := []struct {
		name                     string
		sub, tenant, client, res string
		scopes                   []string
		wantErr                  error
	}{
		{name: "ok", sub: "alice", tenant: "tenant-b", client: "c", res: resource, scopes: []string{"anything"}},
		{name: "no tenant", sub: "alice", client: "c", res: resource},
		{name: "unknown resource", sub: "alice", client: "c", res: "https://other.example", wantErr: devas.ErrUnknownResource},
		{name: "no subject", client: "c", res: resource, wantErr: devas.ErrInvalidArgument},
		{name: "no client", sub: "alice", res: resource, wantErr: devas.ErrInvalidArgument},
		{name: "bad scope", sub: "alice", client: "c", res: resource, scopes: []string{"a b"}, wantErr: devas.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := e.as.IssueToken(tt.sub, tt.tenant, tt.client, tt.res, tt.scopes)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			c, _ := e.decode(tok)
			if c.Subject != tt.sub || c.Tenant != tt.tenant || c.ClientID != tt.client || c.Audience != tt.res || c.Issuer != e.issuer {
				t.Errorf("claims = %+v", c)
			}
		})
	}
}
