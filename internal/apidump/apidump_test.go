package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestAPI fails when the exported API of the module's public packages
// differs from the committed api/mcpguard.txt, so that no identifier is
// added or removed by accident.
func TestAPI(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	root := filepath.Join("..", "..")
	got, err := Dump(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		t.Fatalf("%v (generate it with: go run ./internal/apidump -w)", err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if slices.Equal(got, want) {
		return
	}
	have := make(map[string]bool, len(got))
	for _, l := range got {
		have[l] = true
	}
	committed := make(map[string]bool, len(want))
	for _, l := range want {
		committed[l] = true
	}
	for _, l := range want {
		if !have[l] {
			t.Errorf("removed: %s", l)
		}
	}
	for _, l := range got {
		if !committed[l] {
			t.Errorf("added:   %s", l)
		}
	}
	t.Errorf("the exported API differs from %s. If the change is deliberate, regenerate the file from the module root with\n\tgo run ./internal/apidump -w\nand record each addition and removal (with what to use instead) in CHANGELOG.md", File)
}

func TestCount(t *testing.T) {
	lines := []string{
		"pkg a, func F(int, string) (bool, error)",
		"pkg a, type T struct",
		"pkg a, type T struct, X map[string]int",
		"pkg a, type G[K comparable, V any] struct",
		"pkg a, type G[K comparable, V any] struct, M map[K]V",
		"pkg a, type I interface { M }",
		"pkg a, type I interface, M(int, int)",
		"pkg a, method (*T) M(int, int) error",
		"pkg b, const C = \"x, y struct, z\"",
	}
	got := Count(lines)
	if got["a"] != 5 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("Count = %v, want map[a:5 b:1]", got)
	}
}

// TestDeps: apidump reads export data with the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
