package mcprev

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

func TestIsModern(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"2026-07-28", true},
		{"2027-01-01", true},
		{"2025-11-25", false},
		{"2026-07-27", false},
		{"2026-7-28", false},
		{"2026-07-28 ", false},
		{"2026/07/28", false},
		{"2026-07-2a", false},
		{"9999-99-99", true},
		{"", false},
		{"draft", false},
		{"2026-07-28x", false},
		{"2026-12-01", true},
		{"2025-03-26", false},
	}
	for _, tt := range tests {
		if got := IsModern(tt.v); got != tt.want {
			t.Errorf("IsModern(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// TestDeps: a leaf of the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
