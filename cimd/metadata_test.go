package cimd

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpguard/mcpguard/internal/golden"
)

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
			golden.Check(t, "server-metadata-"+name+".golden", got)
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
	h, _ := NewDCRHandler(DCRConfig{Store: newMemoryStore(), AuthMethods: []string{authMethodNone}})
	m = ServerMetadata(ServerMetadataConfig{RegistrationEndpoint: "https://as.example.com/register", TokenEndpointAuthMethods: h.authMethods()})
	if !slices.Equal(m.TokenEndpointAuthMethodsSupported, []string{"none"}) {
		t.Errorf("restricted DCR metadata = %v", m.TokenEndpointAuthMethodsSupported)
	}
}
