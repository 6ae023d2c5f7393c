package proxy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/proxy"
)

const goodConfig = `# a full configuration
routes:
  - resource: https://mcp.example.com/github/mcp
    upstream: http://127.0.0.1:3000/mcp
    issuers: [https://auth.example.com]
    scopes: [mcp:tools]
    operations:
      tools: {delete_repo: [repo:admin], push: [repo:write]}
      deny_unlisted: false
    identity:
      mode: exchange
      exchange:
        token_endpoint: https://auth.example.com/token
        client_id: proxy
        client_secret_env: EXCHANGE_SECRET
  - resource: https://mcp.example.com/files/mcp
    upstream: http://127.0.0.1:3001/mcp
    issuers: [https://auth.example.com]
    identity:
      ttl: 2m
timeouts:
  idle_stream: 1m
`

func TestParse(t *testing.T) {
	env := func(k string) string { return map[string]string{"EXCHANGE_SECRET": "s3cret"}[k] }
	c, err := proxy.Parse("mcpguard.yaml", []byte(goodConfig), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(c.Routes) != 2 || c.Routes[0].Identity.Exchange.ClientSecret != "s3cret" || c.Routes[1].Identity.TTL != 2*time.Minute ||
		c.Timeouts.IdleStream != time.Minute || c.Routes[0].Operations.Tools["delete_repo"][0] != "repo:admin" {
		t.Errorf("Parse = %+v", c)
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("from-file\n"), 0o600)
	tests := []struct {
		name, doc, want string
	}{
		{"unknown key", "routes:\n  - resource: https://a.example/mcp\n    upstrem: http://127.0.0.1:1/mcp\n",
			`mcpguard.yaml:3:5: routes[0].upstrem: unknown key "upstrem" (docs/proxy.md lists every key)`},
		{"wrong type", "routes:\n  - resource: https://a.example/mcp\n    max_body_bytes: lots\n",
			`mcpguard.yaml:3:21: routes[0].max_body_bytes: want int64, got the string "lots"`},
		{"duplicate key", "routes:\n  - resource: https://a.example/mcp\n    resource: https://b.example/mcp\n",
			`mcpguard.yaml:3:5: routes[0].resource: key "resource" given twice (first at line 2); a key may appear once in a mapping`},
		{"duplicate top-level key", "timeouts: {}\ntimeouts: {}\n",
			`mcpguard.yaml:2:1: timeouts: key "timeouts" given twice (first at line 1); a key may appear once in a mapping`},
		{"inline secret", "routes:\n  - identity:\n      exchange:\n        client_secret: hunter2\n",
			`mcpguard.yaml:4:9: routes[0].identity.exchange.client_secret: secrets are never inline; use client_secret_env (an environment variable's name) or client_secret_file (a file's path)`},
		{"unset env", "routes:\n  - identity:\n      exchange:\n        client_secret_env: NOPE\n",
			`mcpguard.yaml: routes[0].identity.exchange.client_secret_env: the environment variable NOPE is empty or unset`},
		{"both", "routes:\n  - identity:\n      exchange:\n        client_secret_env: EXCHANGE_SECRET\n        client_secret_file: " + secretFile + "\n",
			`set routes[0].identity.exchange.client_secret_env or routes[0].identity.exchange.client_secret_file, not both`},
		{"wrong duration", "timeouts:\n  dial: soon\n", `mcpguard.yaml:2:9: timeouts.dial: want time.Duration, got the string "soon"`},
		{"upstream mapping and stdio", "routes:\n  - upstream: {command: [srv]}\n    stdio: {command: [srv]}\n",
			`mcpguard.yaml:2:5: routes[0]: upstream is a mapping (the stdio form) and stdio is set too; give one`},
		{"upstream mapping, quoted key", "routes:\n  - \"upstream\": {command: [srv]}\n",
			`mcpguard.yaml:2:5: upstream as a mapping must be a plain key; or write stdio: {command: [...]}`},
		{"upstream mapping after non-ASCII", "routes:\n  - {resource: \"https://ä.example/mcp\", upstream: {command: [srv]}}\n",
			`upstream as a mapping must be a plain key; or write stdio: {command: [...]}`},
		{"upstream mapping, unknown key named as written", "routes:\n  - upstream:\n      command: [srv]\n      comand: [x]\n",
			`mcpguard.yaml:4:7: routes[0].upstream.comand: unknown key "comand" (docs/proxy.md lists every key)`},
		{"two errors", "timeouts:\n  dial: 1s\n  dail: 2s\nstrip_headers: 3\n", "mcpguard.yaml:3:3: timeouts.dail: unknown key \"dail\" (docs/proxy.md lists every key)\nmcpguard.yaml:4:16: strip_headers: want []string, got the number \"3\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := proxy.Parse("mcpguard.yaml", []byte(tt.doc), env)
			if !errors.Is(err, proxy.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %q", err, tt.want)
			}
		})
	}
	c, err = proxy.Parse("f", []byte("routes:\n  - identity:\n      exchange:\n        client_secret_file: "+secretFile+"\n"), env)
	if err != nil || c.Routes[0].Identity.Exchange.ClientSecret != "from-file" {
		t.Errorf("secret file: %v %q", err, c.Routes[0].Identity.Exchange.ClientSecret)
	}
}

// TestParseUpstreamMapping: a route's upstream may be a mapping, the
// stdio form (the same keys as stdio), block or flow style, beside a URL
// upstream on another route.
func TestParseUpstreamMapping(t *testing.T) {
	for _, doc := range []string{
		"routes:\n  - resource: http://127.0.0.1:1/a\n    upstream:\n      command: [npx, -y, srv]\n      env: {K: \"{dir}/v\"}\n      dir: /srv/{subject}\n      max_per_user: 2\n  - resource: http://127.0.0.1:1/b\n    upstream: http://127.0.0.1:2/mcp\n",
		"routes:\n  - {resource: http://127.0.0.1:1/a, upstream: {command: [npx, -y, srv], env: {K: \"{dir}/v\"}, dir: \"/srv/{subject}\", max_per_user: 2}}\n  - {resource: http://127.0.0.1:1/b, upstream: http://127.0.0.1:2/mcp}\n",
	} {
		c, err := proxy.Parse("f", []byte(doc), nil)
		if err != nil {
			t.Fatalf("Parse:\n%s\n%v", doc, err)
		}
		a, b := c.Routes[0], c.Routes[1]
		if a.Upstream != "" || strings.Join(a.Stdio.Command, " ") != "npx -y srv" || a.Stdio.Env["K"] != "{dir}/v" || a.Stdio.Dir != "/srv/{subject}" || a.Stdio.MaxPerUser != 2 {
			t.Errorf("route a from\n%s= %+v", doc, a)
		}
		if b.Upstream != "http://127.0.0.1:2/mcp" || b.Stdio.Command != nil {
			t.Errorf("route b from\n%s= %+v", doc, b)
		}
	}
}
