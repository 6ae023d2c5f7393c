package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate"
)

var pinned = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestNotes(t *testing.T) {
	s := newNotes(2, 2, func() time.Time { return pinned })
	tests := []struct {
		name, tenant, text string
		wantErr            error
		wantID             int
	}{
		{name: "first", tenant: "a", text: "one", wantID: 1},
		{name: "empty", tenant: "a", text: "", wantErr: errEmptyNote},
		{name: "too long", tenant: "a", text: strings.Repeat("x", MaxNoteBytes+1), wantErr: errNoteTooLong},
		{name: "longest", tenant: "a", text: strings.Repeat("x", MaxNoteBytes), wantID: 2},
		{name: "not utf-8", tenant: "b", text: "\xff", wantErr: errNoteUTF8},
		{name: "tenant full", tenant: "a", text: "three", wantErr: errTenantFull},
		{name: "second tenant", tenant: "b", text: "b1", wantID: 1},
		{name: "store full", tenant: "c", text: "c1", wantErr: errStoreFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := s.add(tt.tenant, "sub", tt.text)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("add = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (n.ID != tt.wantID || !n.Created.Equal(pinned) || n.Author != "sub") {
				t.Errorf("note = %+v, want id %d", n, tt.wantID)
			}
		})
	}
	if got := s.list("a"); len(got) != 2 || got[0].Text != "one" {
		t.Errorf("list(a) = %+v", got)
	}
	if got := s.list("nobody"); got == nil || len(got) != 0 {
		t.Errorf("list(nobody) = %#v, want an empty non-nil slice", got)
	}
}

type noValidator struct{}

func (noValidator) Validate(context.Context, string) (*validate.Claims, error) {
	return nil, validate.Error{Reason: "malformed"}
}

func TestNewConfigErrors(t *testing.T) {
	good := Config{
		Resource:             "http://127.0.0.1:8080/mcp",
		AuthorizationServers: []string{"http://127.0.0.1:9000"},
		Validator:            noValidator{},
	}
	if _, err := New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"no validator", func(c *Config) { c.Validator = nil }},
		{"resource without path", func(c *Config) { c.Resource = "http://127.0.0.1:8080" }},
		{"resource not loopback http", func(c *Config) { c.Resource = "http://mcp.example.com/mcp" }},
		{"no authorization server", func(c *Config) { c.AuthorizationServers = nil }},
		{"offline_access base scope", func(c *Config) { c.Scopes = []string{"offline_access"} }},
		{"negative limit", func(c *Config) { c.MaxTenants = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.change(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("New = %v, want ErrConfig", err)
			}
		})
	}
}
