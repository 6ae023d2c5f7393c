package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"no subcommand", nil, exitUsage, "", "usage: mcpguard <subcommand>"},
		{"unknown", []string{"frobnicate"}, exitUsage, "", `mcpguard: unknown subcommand "frobnicate"`},
		{"help", []string{"help"}, 0, "  audit    check a live MCP endpoint", ""},
		{"audit usage error reaches the subcommand", []string{"audit"}, 2, "", "usage: mcpguard audit [flags] URL"},
		{"audit -h", []string{"audit", "-h"}, 2, "", "usage: mcpguard audit [flags] URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, func(string) string { return "" }, &out, &errOut)
			if code != tt.want {
				t.Errorf("exit %d, want %d", code, tt.want)
			}
			if !strings.Contains(out.String(), tt.wantStdout) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tt.wantStdout)
			}
			if !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), tt.wantStderr)
			}
		})
	}
}

// TestCommands: every subcommand has a name, a summary and a function, and
// no name is used twice.
func TestCommands(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands() {
		if c.name == "" || c.summary == "" || c.run == nil || seen[c.name] {
			t.Errorf("bad or duplicate entry %+v", c)
		}
		seen[c.name] = true
	}
}
