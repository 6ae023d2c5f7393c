package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDocSections: each test replaces only its own section of the page,
// in docSections order, whatever was there before.
func TestDocSections(t *testing.T) {
	tests := []struct {
		name, before, section, body, want string
	}{
		{"empty page", "", "client", "C\n", "<!-- begin client -->\nC\n<!-- end client -->\n"},
		{"client after server", "<!-- begin server -->\nS\n<!-- end server -->\n", "client", "C",
			"<!-- begin server -->\nS\n<!-- end server -->\n\n<!-- begin client -->\nC\n<!-- end client -->\n"},
		{"server replaced, client kept", "<!-- begin server -->\nold\n<!-- end server -->\n\n<!-- begin client -->\nC\n<!-- end client -->\n", "server", "S2\n",
			"<!-- begin server -->\nS2\n<!-- end server -->\n\n<!-- begin client -->\nC\n<!-- end client -->\n"},
		{"unmarked page dropped", "# hand-written\n", "server", "S", "<!-- begin server -->\nS\n<!-- end server -->\n"},
	}
	old := docPath
	t.Cleanup(func() { docPath = old })
	t.Setenv("MCPGUARD_CONFORMANCE_UPDATE", "1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docPath = filepath.Join(t.TempDir(), "conformance.md")
			if err := os.WriteFile(docPath, []byte(tt.before), 0o644); err != nil {
				t.Fatal(err)
			}
			checkDocSection(t, tt.section, []byte(tt.body), true)
			got, _ := os.ReadFile(docPath)
			if string(got) != tt.want {
				t.Errorf("page = %q, want %q", got, tt.want)
			}
			if s := splitSections(got)[tt.section]; string(s) != tt.body && string(s) != tt.body+"\n" {
				t.Errorf("section %s reads back as %q", tt.section, s)
			}
		})
	}
}
