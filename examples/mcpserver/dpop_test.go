package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestRunDPoPRequired: with -dpop required the 401 offers only the DPoP
// scheme and the metadata says bound tokens are required.
func TestRunDPoPRequired(t *testing.T) {
	ep, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-dpop", "required", "-log-level", "error"}, noEnv)
	resp, err := http.Post(ep.MCP, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `DPoP scope="mcp:tools", resource_metadata="` + ep.Metadata + `", algs="ES256 ES384 ES512 PS256 PS384 PS512 RS256 RS384 RS512 EdDSA"`
	if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != want {
		t.Errorf("challenge = %q, want %q", got, want)
	}
	var md map[string]any
	getJSON(t, ep.Metadata, &md)
	if md["dpop_bound_access_tokens_required"] != true || md["dpop_signing_alg_values_supported"] == nil {
		t.Errorf("metadata = %v", md)
	}
	if _, err := parseFlags([]string{"-dpop", "sometimes"}, noEnv, &syncBuffer{}); err == nil {
		t.Error("-dpop sometimes accepted")
	}
}
