package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
)

// TestActors: the RFC 8693 act chain of a verified token, current actor
// first; malformed chains are errors; a token without act has none.
func TestActors(t *testing.T) {
	f := newFixture(t, nil)
	deep := map[string]any{"sub": "a9"}
	for i := 8; i >= 1; i-- {
		deep = map[string]any{"sub": "a" + string(rune('0'+i)), "act": deep}
	}
	tests := []struct {
		name    string
		act     any // nil: no act claim
		want    []Actor
		wantErr error
	}{
		{name: "none"},
		{name: "one", act: map[string]any{"sub": "agent-1", "iss": "https://idp.example"},
			want: []Actor{{Subject: "agent-1", Issuer: "https://idp.example"}}},
		{name: "chain", act: map[string]any{"sub": "agent-2", "act": map[string]any{"sub": "agent-1"}},
			want: []Actor{{Subject: "agent-2"}, {Subject: "agent-1"}}},
		{name: "no sub", act: map[string]any{"iss": "x"}, wantErr: errActorClaim},
		{name: "not an object", act: "agent", wantErr: errActorClaim},
		{name: "too deep", act: deep, wantErr: errActorClaim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := authtest.Token{Scopes: []string{"mcp"}}
			if tt.act != nil {
				tok.Claims = map[string]any{"act": tt.act}
			}
			c, err := f.v.Validate(t.Context(), f.iss.Token(t, tok))
			if err != nil {
				t.Fatal(err)
			}
			got, err := newPrincipal(c).Actors()
			if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if a, err := (&Principal{Anonymous: true}).Actors(); a != nil || err != nil {
		t.Errorf("anonymous: got %v, %v", a, err)
	}
}

// TestRefusalLogActor: a refusal after a valid token with an act chain
// names the current actor and the chain's length.
func TestRefusalLogActor(t *testing.T) {
	var buf syncBuf
	f := newFixture(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&buf, nil)) })
	tok := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp"}, Claims: map[string]any{
		"act": map[string]any{"sub": "agent-2", "act": map[string]any{"sub": "agent-1"}}}})
	rec := httptest.NewRecorder()
	f.m.Handler(echoHandler()).ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", tok))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d", rec.Code)
	}
	lines := buf.lines()
	if last := lines[len(lines)-1]; !strings.Contains(last, "actor=agent-2 actors=2") {
		t.Errorf("record %s lacks actor=agent-2 actors=2", last)
	}
}
