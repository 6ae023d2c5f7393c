package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docPath is the generated page. Each test owns one section of it,
// between "<!-- begin NAME -->" and "<!-- end NAME -->" lines, in the order
// of docSections; a test replaces only its own.
var docPath = filepath.Join("..", "..", "docs", "conformance.md")

// docSections are the page's sections in order: TestConformance's server
// results, then TestConformanceClient's client results.
var docSections = []string{"server", "client"}

// checkDocSection compares section name of docs/conformance.md with body,
// or, with MCPGUARD_CONFORMANCE_UPDATE set, writes body into it (other
// sections are kept). compare false skips the comparison (the run already
// failed for another reason).
func checkDocSection(t *testing.T, name string, body []byte, compare bool) {
	t.Helper()
	old, _ := os.ReadFile(docPath)
	sections := splitSections(old)
	if os.Getenv("MCPGUARD_CONFORMANCE_UPDATE") != "" {
		sections[name] = body
		var b bytes.Buffer
		for i, n := range docSections {
			s, ok := sections[n]
			if !ok {
				continue
			}
			if i > 0 && b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<!-- begin " + n + " -->\n")
			b.Write(bytes.TrimRight(s, "\n"))
			b.WriteString("\n<!-- end " + n + " -->\n")
		}
		if err := os.WriteFile(docPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if compare && !bytes.Equal(bytes.TrimRight(sections[name], "\n"), bytes.TrimRight(body, "\n")) {
		t.Errorf("the %s section of docs/conformance.md is not what this run produced; regenerate it with MCPGUARD_CONFORMANCE=1 MCPGUARD_CONFORMANCE_UPDATE=1 go test -run %s ./integration/conformance/\n%s",
			name, map[string]string{"server": "TestConformance", "client": "TestConformanceClient"}[name], body)
	}
}

// splitSections returns the sections of a page by name.
func splitSections(page []byte) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range docSections {
		begin, end := "<!-- begin "+n+" -->\n", "<!-- end "+n+" -->"
		_, rest, ok := strings.Cut(string(page), begin)
		if !ok {
			continue
		}
		body, _, ok := strings.Cut(rest, end)
		if ok {
			out[n] = []byte(body)
		}
	}
	return out
}
