package middleware

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate"
)

// TestSenderConstrainedAsBearer: a DPoP-bound JWT (cnf.jkt, RFC 9449 §6.1)
// presented as a Bearer token, with no proof, is 401 invalid_token over
// real HTTP, and the logged cause is validate.Error{Reason: "sender_constrained"}. So is
// an mTLS-bound one (cnf.x5t#S256, RFC 8705 §3.1).
func TestSenderConstrainedAsBearer(t *testing.T) {
	const wantChallenge = `Bearer error="invalid_token", scope="mcp", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The access token is invalid"`
	tests := []struct {
		name string
		cnf  any
	}{
		{"dpop jkt", map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
		{"mtls x5t#S256", map[string]string{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}},
		{"cnf null", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			f := newFixture(t, func(c *Config) { c.OnDecision = rec.on })
			srv := httptest.NewServer(f.m.Handler(echoHandler()))
			defer srv.Close()
			cnf := tt.cnf
			if cnf == nil {
				cnf = []any(nil) // JSON null
			}
			tok := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call", "weather:read"}, Claims: map[string]any{"cnf": cnf}})
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(rpcBody(legacyRev, "tools/call", "get_weather")))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", legacyRev)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != wantChallenge {
				t.Errorf("WWW-Authenticate = %s\nwant %s", got, wantChallenge)
			}
			if string(body) != bodyInvalidToken {
				t.Errorf("body = %s, want %s", body, bodyInvalidToken)
			}
			d := rec.one(t)
			if d.Reason != reasonInvalidToken || !errors.Is(d.Err, validate.Error{Reason: "sender_constrained"}) {
				t.Errorf("decision = %s, %v; want %s wrapping ErrSenderConstrained", d.Reason, d.Err, reasonInvalidToken)
			}
		})
	}
}
