package cimd

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestServerMetadataGolden(t *testing.T) {
	base := ServerMetadataConfig{
		Issuer:                "https://as.example.com",
		AuthorizationEndpoint: "https://as.example.com/authorize",
		TokenEndpoint:         "https://as.example.com/token",
		ScopesSupported:       []string{"mcp:tools", "offline_access"},
	}
	tests := map[string]func(*ServerMetadataConfig){
		"cimd-only": func(c *ServerMetadataConfig) { c.CIMD = true },
		"dcr-only":  func(c *ServerMetadataConfig) { c.RegistrationEndpoint = "https://as.example.com/register" },
		"both": func(c *ServerMetadataConfig) {
			c.CIMD = true
			c.RegistrationEndpoint = "https://as.example.com/register"
		},
		"neither": func(*ServerMetadataConfig) {},
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := base
			mod(&cfg)
			got, err := json.MarshalIndent(ServerMetadata(cfg), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "server-metadata-"+name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("metadata mismatch (-update to accept)\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestServerMetadataRules(t *testing.T) {
	m := ServerMetadata(ServerMetadataConfig{Issuer: "https://as.example.com", CIMD: true})
	if !m.ClientIDMetadataDocumentSupported || m.RegistrationEndpoint != "" ||
		!slices.Equal(m.CodeChallengeMethodsSupported, []string{"S256"}) || !m.AuthorizationResponseISSParameterSupported ||
		!slices.Equal(m.ResponseTypesSupported, []string{"code"}) ||
		!slices.Equal(m.TokenEndpointAuthMethodsSupported, []string{"none"}) ||
		m.TokenEndpointAuthSigningAlgValuesSupported != nil {
		t.Errorf("CIMD metadata = %+v", m)
	}
	m = ServerMetadata(ServerMetadataConfig{Issuer: "https://as.example.com", TokenEndpointAuthMethods: []string{"none"}})
	if m.ClientIDMetadataDocumentSupported || m.TokenEndpointAuthSigningAlgValuesSupported != nil {
		t.Errorf("public-only metadata = %+v", m)
	}
	h, _ := NewDCRHandler(DCRConfig{Store: NewMemoryStore(), AuthMethods: []string{AuthMethodNone}})
	m = ServerMetadata(ServerMetadataConfig{RegistrationEndpoint: "https://as.example.com/register", TokenEndpointAuthMethods: h.AuthMethods()})
	if !slices.Equal(m.TokenEndpointAuthMethodsSupported, []string{"none"}) {
		t.Errorf("restricted DCR metadata = %v", m.TokenEndpointAuthMethodsSupported)
	}
}
