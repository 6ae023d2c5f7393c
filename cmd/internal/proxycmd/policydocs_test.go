package proxycmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyDocExamples: every rule of docs/policy.md's "Examples" passes
// mcpguard proxy -check, as an operator would paste it into a route's
// policy.rules, and a typo in one of them is refused with its name.
func TestPolicyDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	start := strings.Index(s, "\n### Examples\n")
	if start < 0 {
		t.Fatal("docs/policy.md has no ### Examples")
	}
	section := s[start+1:]
	if end := strings.Index(section[1:], "\n### "); end >= 0 {
		section = section[:end+1]
	}
	var rules strings.Builder
	blocks := 0
	for rest := section; ; {
		i := strings.Index(rest, "```yaml\n")
		if i < 0 {
			break
		}
		rest = rest[i+len("```yaml\n"):]
		j := strings.Index(rest, "```")
		if j < 0 {
			t.Fatal("an unterminated yaml block")
		}
		for l := range strings.Lines(rest[:j]) {
			rules.WriteString("        " + l)
		}
		rest = rest[j+3:]
		blocks++
	}
	if blocks < 4 {
		t.Fatalf("%d yaml blocks in Examples, want at least 4", blocks)
	}
	const head = `routes:
  - resource: https://mcp.example.com/mcp
    upstream: http://127.0.0.1:3000/mcp
    issuers: [https://auth.example.com]
    validation: {tenant_claim: tid}
    policy:
      rules:
`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, rules string
		code        int
		stderr      string
	}{
		{"as documented", rules.String(), 0, ""},
		{"a typo", strings.Replace(rules.String(), "claims.resource_access['mcp-notes'].roles", "claims.resource_access['mcp-notes'].roles.size() + user.tennant", 1), 1,
			`Rules["notes-editors-write"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(f, []byte(head+tc.rules), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr syncBuf
			code := Run(context.Background(), []string{"-check", "-wait-keys", "1ms", "-config", f}, func(string) string { return "" }, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s\nconfig:\n%s", code, tc.code, tc.stderr, stderr.String(), head+tc.rules)
			}
		})
	}
}
