package scopetoken

import (
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: scopetoken is imported by leaf packages, so it imports the
// standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"mcp": true, "files:read": true, "!": true, "~": true, "a#[]{}": true, "https://x/y?z": true,
		"": false, "a b": false, " ": false, `a"b`: false, `a\b`: false, "a\tb": false, "é": false, "a\x7f": false, "a\x00": false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %t, want %t", s, got, want)
		}
	}
}

func TestValidList(t *testing.T) {
	for s, want := range map[string]bool{
		"mcp": true, "mcp files:read": true, "a b c": true,
		"": false, " a": false, "a ": false, "a  b": false, "a\tb": false, `a "b"`: false,
	} {
		if got := ValidList(s); got != want {
			t.Errorf("ValidList(%q) = %t, want %t", s, got, want)
		}
	}
}

// FuzzValidList: a scope is valid exactly when every space-separated part
// is a valid scope-token.
func FuzzValidList(f *testing.F) {
	for _, s := range []string{"mcp files:read", "", " ", "a  b", "a\"b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := s != ""
		for _, tok := range strings.Split(s, " ") {
			for i := 0; i < len(tok); i++ {
				if c := tok[i]; c <= 0x20 || c > 0x7e || c == '"' || c == '\\' {
					want = false
				}
			}
			if tok == "" {
				want = false
			}
		}
		if got := ValidList(s); got != want {
			t.Fatalf("ValidList(%q) = %t, want %t", s, got, want)
		}
	})
}
